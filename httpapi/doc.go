// Package httpapi serves Gatehouse over HTTP: the /v1 API (sessions,
// input, events, cancel), the Server-Sent Events stream of a session's
// log, the health and readiness probes, and, when configured, the embedded
// web chat. It maps error codes to HTTP statuses in one place (errors.go)
// so every endpoint answers errors the same way: JSON {code, message}.
//
// The API reads and writes through the kernel only: an input is committed
// (with its queued run, in one transaction) before it is acknowledged, and
// the stream projects committed events, never runtime state. Mechanisms
// that need nothing of the server are subpackages: connlimit (connection
// caps, deadlines), reqbody, apiauth, sse (the stream's frames), probes
// (/healthz, /livez, /readyz) and adminapi (the admin page's reads and
// charts, mounted here behind the token).
package httpapi
