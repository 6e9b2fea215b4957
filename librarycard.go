package gatehouse

import "encoding/json"

// A library card (GateKindLibrary) that would replace a document of the
// shared collection the operator put there (from the watched folder, the
// API or the admin page, not a chat) says so in its arguments: adding a
// chat's file over it changes what every chat reads as trusted text, so
// deciding it needs the operator on the web UI or the API, never a press
// in a chat. The rule of who may decide consults LibraryNeedsOperator;
// package gateway/uploads checks it again when it adds the file.

// LibraryReplacesOperatorKey is the key of a library card's arguments
// that is true when the card would replace an operator's document.
const LibraryReplacesOperatorKey = "replacesOperator"

// LibraryNeedsOperator reports whether a gate of kind with these
// arguments (Gate.Arguments, GateOpened.Arguments) may be decided only
// by the operator on the web UI or the API: a library card that would
// replace an operator's document.
func LibraryNeedsOperator(kind string, args json.RawMessage) bool {
	if kind != GateKindLibrary || len(args) == 0 {
		return false
	}
	var a map[string]json.RawMessage
	if json.Unmarshal(args, &a) != nil {
		return false
	}
	var yes bool
	return json.Unmarshal(a[LibraryReplacesOperatorKey], &yes) == nil && yes
}

// OperatorSurface reports whether a decision by who on surface is the
// operator's own: the local user on the web UI or the API.
func OperatorSurface(by, surface string) bool {
	return by == LocalUser && (surface == "web" || surface == "api")
}
