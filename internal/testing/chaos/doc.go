// Package chaos holds the parts of the tests in which dependencies fail
// under load: private Postgres and Redis servers that can be stopped and
// killed, a TCP link that can be cut, the fake model that asks for a mail,
// and an API client that retries as a real one does and drives one
// approval conversation. cmd/gatehouse's TestDepsFailAndComeBack and the
// failover test (internal/testing/failover) are built on it. Test code
// only: production code never imports it.
package chaos
