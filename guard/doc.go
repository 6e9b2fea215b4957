// Package guard keeps one gateway process running: it starts the child
// (`gatehouse serve`, same flags and environment), probes its /livez, and
// restarts it only when it has exited or /livez failed Failures probes in
// a row — a child that stopped answering is killed (SIGKILL) first.
// Restarts back off, doubling from Backoff up to MaxBackoff. It never
// looks at /readyz: a gateway whose database is down is alive, says it is
// not ready, and recovers by itself; restarting it would help nothing.
//
// SIGTERM or SIGINT to the guard (Signal) is forwarded to the child, and
// the guard waits for its drain and exits with its status. A reload
// (Reload: SIGHUP, or `gatehouse reload`, which finds the guard through
// its pid file) pauses the child's claims (SIGUSR1, handled by serve),
// waits until /livez reports no turn running — at most ReloadMaxWait —
// then stops the child with SIGTERM (the drain gives its platform leases
// to another replica) and starts a new one at once. Pending approvals live
// in the store and stay pending across it.
//
// The child runs in a process group of its own, so a terminal's Ctrl-C
// reaches it once, through the guard; on Linux it gets SIGTERM if the
// guard dies.
//
// As a container's PID 1, or a child subreaper, the guard inherits every
// process whose parent died — what a killed gateway's shell tools and MCP
// stdio servers become — and reaps them on SIGCHLD (Linux), leaving its
// own child to exec.Cmd.Wait so that the child's exit status is kept.
package guard
