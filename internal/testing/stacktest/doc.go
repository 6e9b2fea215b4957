// Package stacktest is the one whole-stack harness for tests. NewEnv
// wires, as serve does, a store (a fresh SQLite file unless one is given),
// the kernel, the supervisor with a fake model (the fake OpenAI server of
// models/modeltest, or a script for the scripted model), a tool worker
// (one danger tool, post_note, unless other tools are given), the gate
// service, the gateway to one adapter and its fake platform
// (adapters/<name>/<name>test) and, when asked, memory and the HTTP API.
// A nil factory gives a stack without a chat platform, as the web chat
// and the API see it; NoWorkers leaves the turns to the test.
//
// Stack hands the same wiring to the shared adapter suite
// (adaptertest.Run), which stays below the supervisor and the concrete
// adapters. Eventually is internal/testing/testenv's, the polling helper every
// test shares.
//
// The package imports httpapi but not httpapi/web (a test passes
// web.Handler() in EnvOptions.HTTP); neither may import stacktest outside
// an external _test package.
package stacktest
