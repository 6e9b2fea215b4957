// Package redisha runs Redis behind Sentinel for tests: a master, one
// replica and three Sentinels (quorum 2), each a private redis-server
// process on a free loopback port with a temporary directory, with
// timeouts tuned so that a killed master is replaced in seconds. The
// Sentinels are `redis-server --sentinel` with a written config, so
// nothing beyond redis-server is needed.
//
// A test points the gateway (or a go-redis failover client) at URL, kills
// the master with KillMaster and waits for the Sentinels' choice with
// WaitNewMaster. Everything it started is killed when the test ends.
//
// Without redis-server on PATH the test is skipped, saying how to install
// it; with GATEHOUSE_TEST_REQUIRE_SERVICES=1 it fails instead, as in CI.
// Like every package under internal/testing it is for tests only.
package redisha
