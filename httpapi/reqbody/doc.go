// Package reqbody reads request bodies under a server's limits (Limits):
// a JSON object decoded strictly (Decode), or a raw body read whole
// (ReadAll). Every failure is a typed error whose message says what was
// wrong with the body: over the size limit (payload-too-large), late
// past the read timeout, empty, malformed, an unknown field or a field of
// the wrong type (invalid).
//
// It lives apart from httpapi because it needs nothing of the server but
// its two limits: the handlers and the webhook mounts share it, and the
// wording of body errors is kept in one place.
package reqbody
