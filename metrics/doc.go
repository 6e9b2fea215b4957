// Package metrics owns Gatehouse's Prometheus series beyond the gateway's
// own (gatehouse_receive_*, gatehouse_platform_connected and the outbox's
// gatehouse_outbox_sends_total, which the gateway registers):
//
//   - from committed events, through one hook: Observe, the kernel's
//     Observer, sees the events of every commit this process made (never
//     another replica's, so each commit counts once): turns started and
//     settled, lease takeovers, gates opened and decided, effects started,
//     finished and of unknown outcome, model fallbacks;
//   - from the model registry's ledger hook (Ledger wraps it): model
//     calls, their latency, tokens, cost and errors;
//   - read at scrape time (Config.Queue, Config.Incidents): runs queued,
//     the oldest queued run's age, unsent outbox rows and their age,
//     incidents open.
//
// Labels are bounded: statuses, decisions and surfaces are mapped onto
// closed sets, provider and model pairs are capped (MaxModels), and no
// series carries a session, user or chat id. Names and help are listed in
// docs/operations.md ("Metrics, dashboard and alerts").
package metrics
