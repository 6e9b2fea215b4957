// Package effectjournal keeps the receipts of outbound effects, so an
// effect runs at most once even across crashes. Before an approved tool
// with an outside effect runs, a receipt for this exact call is committed
// (started); after it runs, its result and the receipt's finished are
// committed in one transaction. A successor that finds started without
// finished does not run the call again: the outcome is unknown and the user
// is told so. A tool that accepts an idempotency key gets the receipt id,
// and only such a tool may be retried.
//
// Receipts are events in the session's log (kind effect.receipt), keyed by
// call: the log is the truth, and a receipt commits with the lease's fence
// like any other write of the attempt.
package effectjournal
