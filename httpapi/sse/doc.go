// Package sse is the wire format of a session's Server-Sent Events
// stream: a committed event is "id: <seq>\nevent: <kind>\ndata: <event>\n\n"
// (WriteEvent), partial text is "event: partial\ndata: <partial>\n\n"
// with no id (WritePartial, DrainPartials), so a reconnect's
// Last-Event-ID is always a committed seq, and ": ping" comments keep an
// idle stream open (WritePing).
//
// It lives apart from httpapi so the frames are written in one place,
// apart from the loop that decides what to send and when (httpapi's
// stream handler), and can be read and tested without a server.
package sse
