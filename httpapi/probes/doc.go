// Package probes answers the process's health questions over HTTP, for
// load balancers, orchestrators and the guard:
//
//   - GET /healthz: the HTTP server answers (nothing else is checked).
//   - GET /livez: the process's own loops are alive — the HTTP server
//     (it answered) and, when Workers is set, the supervisor's claim loop,
//     whose heartbeat must be fresher than StaleAfter. Busy workers are not
//     dead ones: the loop goes round while every worker is busy. A store
//     that is down does not fail it (that is /readyz). 503 names the stale
//     loop. The body also says how many turns run and whether claims are
//     paused, which a reload waits on.
//   - GET /readyz: not draining, and every Ready dependency (the store,
//     Redis) answers a ping. The body lists the chat platforms' states
//     (Platforms) without counting them: a chat outage is not a reason
//     to take a replica out of a load balancer.
//
// The package knows no supervisor and no store: what it checks comes in
// as interfaces (Workers, Pinger) from cmd.
package probes
