// Package formbody is Discord's rules for what a request body may hold,
// as the Discord fake (discordtest) checks them before it acts: message
// content and allowed_mentions, message components (action rows of
// buttons), modals (an interaction answered with type 9), an
// interaction callback's body (Callback: its type, and its data as a
// message), and the bulk overwrite of application commands. A body Discord would refuse with
// 50035 "Invalid Form Body" comes back as an *Error naming the offending
// field's path; the fake lists it and writes the answer. Pure functions:
// no state, no HTTP.
package formbody
