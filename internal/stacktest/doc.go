// Package stacktest is the one whole-gateway harness for tests: NewEnv
// wires a store (a fresh SQLite file unless one is given), the kernel,
// the supervisor with a fake model (models/modeltest), a tool worker with
// one danger tool, the gate service and the gateway to one adapter and
// its fake platform (adapters/<name>/<name>test).
//
// Stack hands the same wiring to the shared adapter suite
// (adaptertest.Run), which stays below the supervisor and the concrete
// adapters. Eventually is the polling helper tests of the stack share.
package stacktest
