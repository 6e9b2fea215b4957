package slacktest

import (
	"net/http"
	"slices"
	"time"
)

// ---- outages: a Slack that fails, for the adapter's status and pace ----

// FailCalls makes every Web API method answer HTTP status at once, before
// looking at the token, as a Slack that is down (5xx) or a proxy or
// server that does not serve the Web API (404) does; the socket
// endpoint answers it too, and open sockets are closed. 0 answers again.
// Failed calls are not refusals: Errors does not list them.
func (f *SlackFake) FailCalls(status int) {
	f.mu.Lock()
	if status == 0 {
		delete(f.failing, "")
	} else {
		f.failing[""] = status
	}
	conns := slices.Clone(f.conns)
	f.mu.Unlock()
	if status != 0 {
		closeConns(conns)
	}
}

// FailMethod makes one Web API method ("apps.connections.open") answer
// HTTP status at once; 0 answers again. FailCalls wins over it.
func (f *SlackFake) FailMethod(method string, status int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if status == 0 {
		delete(f.failing, method)
	} else {
		f.failing[method] = status
	}
}

// DropSockets makes every Socket Mode connection fail at once: the
// socket is accepted, says hello and is closed before any delivery, as
// when Slack or a proxy cuts it; open sockets are closed now. Off
// (false), sockets stay up again. Deliveries wait for a socket that
// stays.
func (f *SlackFake) DropSockets(on bool) {
	f.mu.Lock()
	f.dropSockets = on
	conns := slices.Clone(f.conns)
	f.mu.Unlock()
	if on {
		closeConns(conns)
	}
}

// Calls are the times the fake received each call of a Web API method,
// failed or not, oldest first.
func (f *SlackFake) Calls(method string) []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.calls[method])
}

// SocketDials are the times each Socket Mode handshake arrived, refused
// or not, oldest first.
func (f *SlackFake) SocketDials() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.sockets)
}

// failLocked answers a call of method ("" for the socket) with the
// status it is set to fail with, if any.
func (f *SlackFake) failLocked(w http.ResponseWriter, method string) bool {
	status, ok := f.failing[""]
	if !ok && method != "" {
		status, ok = f.failing[method]
	}
	if !ok {
		return false
	}
	http.Error(w, http.StatusText(status), status)
	return true
}

// closeConns closes sockets; their readers take them off the list.
func closeConns(conns []*slackConn) {
	for _, c := range conns {
		_ = c.WS.Close()
	}
}
