// Package incidents surfaces stuck turns and lets a person end them.
//
// A run records what its attempt is doing and since when (gh.Run.Step and
// StepStarted, written by the lease renewals). A sweeper on every replica
// finds running runs whose step has not changed for Config.StuckAfter —
// a run waiting for a person is not running, so waiting never counts —
// and opens one incident per run and epoch: a gate of kind incident
// (gh.GateKindIncident) committed with its gate.opened event from outside
// the run (kernel.OutsideCommitTx), for the "call" incident:<run>:<epoch>:1
// (its key is that call's first gate.opened key), so
// replicas that see the same run at once open it once. The event reaches
// every chat of the session and the web chat the way an approval card
// does, with two options, Close and Diagnose, decided like a gate: the
// first press on any surface wins and every copy is edited (package
// gates, whose Config.Outside maps incident gates to this package's Service).
//
// A decision is logged and carried out in the transaction that logs it
// (CommitDecisionTx), and never resumes the run:
//
//   - Close fences the stuck worker — the session's epoch is raised and
//     the run, settled as cancelled from outside, takes it, so the
//     worker's renewals and commits fail and its attempt is cancelled —
//     and answers every call the turn left open: one whose effect has a
//     started receipt and no finished one gets "outcome unknown" and a
//     finished receipt (it is never run again), any other "not run".
//     A notice tells the chat. Input that arrived meanwhile is queued for
//     a new run.
//   - Diagnose opens the next card at once (so Close stays at hand),
//     then, outside the transaction, asks the model (Config.Diagnose)
//     about the run's recent events, step and errors, without a claim
//     and without waiting for the stuck run, and commits the answer as a
//     notice ("diagnosis:<gate>").
//
// A card whose run moved on (a new step, another epoch, settled) is
// retired by the sweeper as expired, with the reason on the card. List
// serves GET /v1/incidents and the admin page.
package incidents
