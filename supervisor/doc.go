// Package supervisor owns the worker side of a turn: a pool of workers that
// claim runs from the kernel, renew their lease at a third of its TTL and
// cancel the attempt the moment renewal fails; and the attempt itself —
// pre-flight in a strict order (load from the latest compaction, decode,
// decide whether a turn is owed, resolve the model before anything is
// committed, fill missing tool results, present unread input last), the
// model loop (one request per turn, one tool batch per assistant message,
// guide input injected at turn boundaries, compaction when the context
// grows), and the settle with the attempt's run.finished account.
//
// Reading the log is supervisor/transcript's: the events decoded into the
// model's messages and the facts a turn is decided by, with no I/O. The
// supervisor commits, then records what it committed there.
//
// It never knows a platform: it commits events, and surfaces follow the log.
package supervisor
