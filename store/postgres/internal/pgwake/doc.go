// Package pgwake owns the Postgres store's listener: one pooled connection
// held in LISTEN on the deployment's channels (wake-ups for claimers,
// commits relayed to other replicas' streams), every notification handed
// to the store, and reconnection with backoff after a failure, reported so
// that everyone is woken, since notifications sent meanwhile were missed.
package pgwake
