// Package scalebench measures that the gateway stays flat at scale
// (issue 13), on both stores. It has no code of its own: the benchmarks
// and tests are in its _test files.
//
//   - BenchmarkScaleTurn: a simple turn on a database of 100,000 answered
//     sessions and 1,000,000 events, divided by the same turn on an empty
//     database in the same run (scale-cost-ratio, goal ≤ 1.2).
//   - BenchmarkIdleSessions: goroutines and heap that 10,000 idle,
//     answered sessions cost the running gateway (store, supervisor, gate
//     sweeper, memory, HTTP API), against none.
//   - BenchmarkOpenStreams: goroutines and heap per open SSE stream, 1,000
//     streams on 1,000 sessions.
//   - TestIdleSessionsHoldNoGoroutines and
//     TestOpenStreamsHoldBoundedGoroutines: the same as behaviour, at
//     sizes a normal go test run affords.
//
// Run them on both stores, Postgres on loopback:
//
//	GATEHOUSE_TEST_POSTGRES_URL=postgres://postgres@127.0.0.1:5432/test?sslmode=disable \
//	go test -run '^$' -bench . -benchtime=1x -timeout 30m ./internal/testing/scalebench
//
// Each benchmark does a fixed amount of work, whatever b.N; run it with
// -benchtime=1x. Sizes can be lowered for a quick run:
//
//	GATEHOUSE_SCALE_SESSIONS       sessions of the big database (100000; 10 events each)
//	GATEHOUSE_SCALE_TURNS          turn rounds measured per database (40)
//	GATEHOUSE_SCALE_IDLE_SESSIONS  idle sessions (10000)
//	GATEHOUSE_SCALE_IDLE_LIVE      of those, answered through the API (2000)
//	GATEHOUSE_SCALE_STREAMS        open SSE streams (1000)
//
// The big database is written with bulk SQL (COPY on Postgres, one
// transaction of prepared inserts on SQLite), rows shaped as a simple
// answered turn leaves them; every run checks that shape against a real
// turn and loads bulk sessions through the kernel before it measures.
// Each Postgres database is one of its own (CREATE DATABASE on the
// server of GATEHOUSE_TEST_POSTGRES_URL), dropped at the end.
package scalebench
