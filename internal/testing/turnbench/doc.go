// Package turnbench measures an approval turn end to end (issue 13, "a
// lean turn"): a message, the model asking for email_send, the card, the
// approval, one SMTP send and the answer, driven over the HTTP API with the
// session's SSE stream attached, against the whole stack of
// internal/testing/stacktest (scripted model, the real email_send tool aimed at
// internal/testing/smtptest on loopback, memory with its model pass) on one store.
//
// The package owns only tests:
//
//   - BenchmarkApprovalTurn, sub-benchmarks postgres/C=1, postgres/C=8,
//     sqlite/C=1 and sqlite/C=8: b.N turns in sessions of turnsPerSession
//     (5) turns, C sessions at a time, each session's turns one after
//     another on one SSE stream kept open (each turn takes the events
//     after its own input and the end of its own run), so that the memory
//     pass batches a session's turns as it does in a conversation
//     (memory.Config.Batch, default 5: one model call per 5 turns). Every
//     metric is per turn: turns/s, the store's durable commits
//     (storetest.CountingStore), the memory pass's model calls and commits
//     (its jobs run after the sessions, a warm-up session's before, as
//     memory.Worker would), and a bare INSERT rate on the same database at the same
//     concurrency with the ratio of the two. On Postgres it also reports
//     write transactions per turn from the xid counter (cluster-wide, so
//     other clients of the server add to it), WAL syncs per turn from
//     pg_stat_wal (PG 14+; cluster-wide too), and the statements the
//     store sends, counted by a pgx tracer (postgres.Config.Tracer): reads
//     (SELECT only, knowledge recall counted apart), writes and the
//     transactions that wrote; the top statements per turn are logged.
//   - TestApprovalTurnWriteTransactions (issue 32): approval turns on
//     Postgres, each followed by a client on a stream of its own
//     (stack.streamPerTurn), the relay counted through
//     storetest.CountingRelay; the pgx tracer's write transactions per
//     turn are held at maxApprovalWriteTx (8), with no timing.
//   - TestApprovalTurnFlow: two sessions of three turns on SQLite through
//     the same code, asserting what a user sees (each turn's own card and
//     gate approved, one mail per turn, the one its result names, the
//     answer on the stream) and one memory model call per session, so the
//     harness cannot rot.
//
// Run the benchmark with
//
//	GATEHOUSE_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test?sslmode=disable \
//	go test -run '^$' -bench ApprovalTurn -benchtime=300x ./internal/testing/turnbench
//
// (300 turns: 60 sessions of 5.)
//
// Without GATEHOUSE_TEST_POSTGRES_URL the Postgres sub-benchmarks skip
// (they fail with GATEHOUSE_TEST_REQUIRE_SERVICES=1). Everything runs on
// loopback and is stopped when each sub-benchmark ends.
package turnbench
