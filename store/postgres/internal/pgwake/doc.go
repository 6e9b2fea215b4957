// Package pgwake owns the Postgres store's wake-up listener: one pooled
// connection held in LISTEN on the deployment's channel, every
// notification turned into a local wake-up, and reconnection with backoff
// after a failure, waking everyone since notifications sent meanwhile were
// missed.
package pgwake
