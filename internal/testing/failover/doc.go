// Package failover holds the end-to-end test of losing a database server
// (issue #28): a pg_auto_failover formation and Redis behind Sentinel on
// loopback, two gateway replicas built from cmd/gatehouse, a stream of
// approval conversations through the HTTP API and plain messages through
// the Telegram fake, and kill -9 of the Postgres primary and then of the
// Redis master in the middle of it. It lives apart from cmd/gatehouse so
// it does not lengthen that package's tests. Test code only.
package failover
