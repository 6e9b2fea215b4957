// Package httpapi serves Gatehouse over HTTP: health and readiness probes
// now, the /v1 API, the SSE stream, admin endpoints and the embedded web
// chat as they land. It maps error codes to HTTP statuses in one place
// (errors.go) so every endpoint answers errors the same way: JSON
// {code, message}.
package httpapi
