// Package connlimit bounds what one client can hold of the HTTP server:
// how many connections are open (Listener, with a reserve over the cap
// whose connections are marked for a fast refusal, OverCap), how many the
// process's open-file limit can hold (Fit, OpenFileLimit), how long a
// request may take to be read and answered (SetDeadlines), and how long
// each write of a long-lived response may wait (LongLived).
//
// It lives apart from httpapi because none of it knows the API: it works
// on net.Listener, net.Conn and http.ResponseWriter only. What a refusal
// says, which routes are probes, and where the limits come from stay in
// httpapi, which wires these pieces into its servers.
package connlimit
