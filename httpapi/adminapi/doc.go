// Package adminapi is the operator's side of the /v1 API, read by the
// admin page: the platforms (GET /v1/adapters), the receive log
// (GET /v1/receive-log), the outbox (GET /v1/outbox) and activity over
// time for the charts (GET /v1/admin/stats). Every endpoint answers with
// no chat platform configured: the receive log and outbox are read from
// the store (empty), and the platforms list is empty with a hint.
//
// Package httpapi mounts the routes behind its token check and answers
// errors through its error-code mapping (Config.WriteError).
package adminapi
