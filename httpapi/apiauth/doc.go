// Package apiauth decides who may call the API: with a token configured,
// a request must carry it (Token: "Authorization: Bearer", or the
// access_token query parameter where a route allows it); without one, the
// API serves this machine only (SameMachine: loopback Host, no
// cross-origin Origin), so a web page elsewhere cannot drive it through
// the user's browser.
//
// It lives apart from httpapi because the checks need nothing of the
// server: a refused request is handed to the caller's Refuse with a typed
// unauthorized error, and the caller answers it in its own error format.
package apiauth
