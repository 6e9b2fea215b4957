// Package people owns who a chat platform's user is to the gateway and
// who is let in: the pseudonymous user id the log names them by
// ([PseudonymousUserID]) and their user key ([UserKey]); the approver
// rules saying who, besides the requester, may decide a tool's gates
// ([Approvers], [ParseApprovers], [ToolKey]); pairing codes (drawing
// them, their form, how long they last, how many a sender gets, the reply
// a stranger is sent); and [Admin], which lists pending codes and the
// people let in, approves codes, lets people in and revokes them over the
// store alone (for the API and `gatehouse pair`, with or without a running
// gateway), and sets each person's own time zone ([ParseZone],
// [Admin.SetZone]: /tz in the chat, People in /admin).
//
// What needs a receive's transaction or a press — whether a sender is
// admitted, who gets a code, whether a presser may decide — stays in
// package gateway, which applies these rules.
package people
