// Package testing is the root of the test-harness tree: every package
// under internal/testing (the whole-stack harness stacktest, the SMTP
// server smtptest, Redis behind Sentinel redisha, the pg_auto_failover
// formation pgha, the failing-dependency parts chaos and the failover
// test failover, the service discovery testenv, the benchmarks turnbench
// and scalebench) is for tests only,
// and production code never imports one. The production leaves stay
// beside it in internal/ (backoff, baseurl, embeddings, inflight,
// sweeper, textterms), so a path says whether production may import it.
package testing
