// Package pgha runs a pg_auto_failover formation for tests: a monitor and
// two Postgres nodes with synchronous replication, private processes on
// loopback run as the postgres user, with the monitor's health checks
// tuned from its defaults (seconds, not tens of seconds) so a failover
// fits in a test. KillPrimary ends the primary as a crash would (kill -9
// of its keeper and its postmaster); WaitNewPrimary reports how long the
// monitor took to promote the standby. Test code only.
package pgha
