// Package gates is the gate's one home: it opens, decides, closes and
// expires every gate of every kind. The first decision on any surface
// wins, by compare-and-set from pending; every later press gets the
// decision already made (who and where) and never makes a second one.
//
// A gate opens through [Service.OpenInRun] (a tool approval or a question:
// the row and gate.opened in the attempt's fenced commit) or
// [Service.OpenOutsideTx] (an incident's card, a library card: in the
// outside commit its caller gives), and the registry is seeded. A cancel
// closes its turn's gates through [Service.CloseRunGatesTx] (the kernel
// asks: kernel.GateCloser); an incident whose turn moved on is retired
// with [Service.Retire]. The kinds outside a run register what their
// decisions do ([Service.Register], [Kind]); a run's kinds resume the
// run. From the opening on the SQL row and the log are the durable truth:
//
//   - a [Registry] arbitrates presses. [NewSQL] does it with the store's
//     compare-and-set (the embedded default); package gates/redisgates does it
//     with one Lua script on a Redis hash, so that many replicas and many
//     presses of one gate cost Redis round trips instead of database
//     writes. The SQL compare-and-set is the decision: a Redis claim is a
//     proposal, and no press (winner or not) is told a decision SQL does
//     not hold, so losing Redis loses nothing anyone was told.
//   - a [Service] makes sure every decision reaches the log: gate.decided
//     (idempotency key "gate:"+id) is committed with an edge commit, which
//     queues the session's run, together with store MarkGateLogged in one
//     transaction. The winner commits; a later press that finds the
//     decision not yet logged commits it too (the key makes it once), and a
//     sweeper expires due gates and repairs decisions a crash left out of
//     the log. Any number of replicas may sweep at once.
//
// Expiry is never a refusal: a gate nobody decided in time is "expired", by
// "timeout", on surface "gateway".
package gates
