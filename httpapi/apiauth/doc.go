// Package apiauth decides who may call the API. Every request carries a
// credential, on loopback too: the token ("Authorization: Bearer", the
// access_token query parameter where a route allows it), or the session
// cookie a browser gets by trading the token at GET /login?token=… (the
// start log prints that link). A cookie-carried write must also come from
// this origin (SameOrigin), so a web page elsewhere cannot drive the API
// through the user's browser.
//
// Nothing here knows where the token comes from: cmd takes
// GATEHOUSE_API_TOKEN, or the one generated at the first start and kept
// in the store. A refused request is handed to the caller's Refuse with a
// typed unauthorized error, and the caller answers it in its own error
// format.
package apiauth
