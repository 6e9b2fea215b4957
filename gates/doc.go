// Package gates decides approval gates: the first decision on any surface
// wins, by compare-and-set from pending; every later press gets the
// decision already made (who and where) and never makes a second one.
//
// A gate row is created elsewhere (the tool worker inserts it with
// tx.InsertGate in the transaction that commits gate.opened). From then on
// the SQL row and the log are the durable truth:
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
