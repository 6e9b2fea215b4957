package discordtest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/gatehouse/gatehouse/adapters/discord/discordtest/wire"
	"github.com/gatehouse/gatehouse/adapters/internal/platformfake"
)

// ---- gateway ----

func (f *DiscordFake) serveGateway(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.sockets++
	failing, failSockets := f.failing, f.failSockets
	f.mu.Unlock()
	if failing {
		badGateway(w)
		return
	}
	ws, err := platformfake.Upgrade(w, r)
	if err != nil {
		return // the upgrader answered the HTTP error
	}
	c := &discordConn{WSConn: platformfake.WSConn{WS: ws}}
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		_ = ws.Close()
		return
	}
	if failSockets {
		f.mu.Unlock()
		_ = ws.Close()
		return
	}
	f.conns[c] = struct{}{}
	f.wg.Add(1)
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		delete(f.conns, c)
		if c.session != nil && c.session.conn == c {
			c.session.conn = nil
		}
		f.mu.Unlock()
		_ = ws.Close()
		f.wg.Done()
	}()
	if v := r.URL.Query().Get("v"); v != "9" && v != "10" {
		f.mu.Lock()
		f.refuse("gateway: API version %q (want 9 or 10)", v)
		f.mu.Unlock()
		c.CloseWith(4012, "Invalid API version.")
		return
	}
	if e := r.URL.Query().Get("encoding"); e != "" && e != "json" {
		f.mu.Lock()
		f.refuse("gateway: encoding %q (the fake speaks json)", e)
		f.mu.Unlock()
		c.CloseWith(4002, "Error while decoding payload.")
		return
	}
	if err := c.WriteJSON(map[string]any{"op": 10, "s": nil, "t": nil, "d": map[string]any{"heartbeat_interval": f.cfg.heartbeat.Milliseconds()}}); err != nil {
		return
	}
	_ = ws.SetReadDeadline(time.Now().Add(10 * time.Second))
	for {
		_, raw, err := ws.ReadMessage()
		if err != nil {
			return
		}
		var p struct {
			Op int             `json:"op"`
			D  json.RawMessage `json:"d"`
		}
		if err := json.Unmarshal(raw, &p); err != nil {
			f.mu.Lock()
			f.refuse("gateway: frame is not JSON: %v", err)
			f.mu.Unlock()
			c.CloseWith(4002, "Error while decoding payload.")
			return
		}
		if !f.gatewayOp(c, p.Op, p.D) {
			return
		}
		// Discord closes a session whose client stops heartbeating.
		_ = ws.SetReadDeadline(time.Now().Add(3*f.cfg.heartbeat + 10*time.Second))
	}
}

// gatewayOp handles one client frame; false ends the connection.
func (f *DiscordFake) gatewayOp(c *discordConn, op int, d json.RawMessage) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	fail := func(code int, text, why string) bool {
		f.refuse("gateway: %s", why)
		c.CloseWith(code, text)
		return false
	}
	switch op {
	case 1: // heartbeat
		var seq *int64
		_ = json.Unmarshal(d, &seq)
		if c.session != nil && seq != nil && *seq > c.session.acked && *seq <= c.session.seq {
			c.session.acked = *seq
		}
		return c.WriteJSON(map[string]any{"op": 11}) == nil
	case 2: // identify
		if c.session != nil {
			return fail(4005, "Already authenticated.", "IDENTIFY on an identified connection")
		}
		var id struct {
			Token      string `json:"token"`
			Intents    *int   `json:"intents"`
			Properties *struct {
				OS      string `json:"os"`
				Browser string `json:"browser"`
				Device  string `json:"device"`
			} `json:"properties"`
		}
		if err := json.Unmarshal(d, &id); err != nil || id.Properties == nil {
			return fail(4002, "Error while decoding payload.", "IDENTIFY without token/properties")
		}
		if !f.tokenOK(id.Token) {
			return fail(4004, "Authentication failed.", "IDENTIFY with a wrong token")
		}
		if id.Intents == nil {
			return fail(4013, "Invalid intent(s).", "IDENTIFY without intents")
		}
		f.identify(c, *id.Intents)
		return true
	case 6: // resume
		var rs struct {
			Token     string `json:"token"`
			SessionID string `json:"session_id"`
			Seq       int64  `json:"seq"`
		}
		if err := json.Unmarshal(d, &rs); err != nil {
			return fail(4002, "Error while decoding payload.", "RESUME is not JSON")
		}
		if !f.tokenOK(rs.Token) {
			return fail(4004, "Authentication failed.", "RESUME with a wrong token")
		}
		s, ok := f.sessions[rs.SessionID]
		if !ok {
			// Not a refusal of a bad request: Discord answers a session it
			// no longer has with op 9, and the client identifies anew.
			return c.WriteJSON(map[string]any{"op": 9, "d": false}) == nil
		}
		f.resume(c, s, rs.Seq)
		return true
	case 3, 4, 8: // presence, voice state, request guild members
		return c.session != nil || fail(4003, "Not authenticated.", fmt.Sprintf("op %d before IDENTIFY", op))
	default:
		return fail(4001, "Unknown opcode.", fmt.Sprintf("unknown op %d", op))
	}
}

// identify starts a new session on c: READY, then the events no client
// has read yet (held ones, and undelivered ones of older sessions).
func (f *DiscordFake) identify(c *discordConn, intents int) {
	s := &discordSession{id: "sess-" + f.snowflake(), intents: intents}
	pending := f.held
	f.held = nil
	if old := f.session; old != nil {
		for _, ev := range old.events {
			if !ev.delivered && ev.t != "READY" && ev.t != "RESUMED" {
				pending = append(pending, ev)
			}
		}
		if old.conn != nil && old.conn != c {
			old.conn.CloseWith(4000, "Another session took over.")
			old.conn = nil
		}
	}
	f.sessions[s.id] = s
	f.session = s
	c.session = s
	s.conn = c
	s.seq++
	ready := wire.Ready(s.id, f.wsURL(), f.userJSON(f.bot, true), f.guildID, f.appID)
	if err := c.WriteJSON(map[string]any{"op": 0, "t": "READY", "s": s.seq, "d": ready}); err != nil {
		return
	}
	c.ready = true
	for _, ev := range pending {
		f.emit(&discordEvent{t: ev.t, d: ev.d, msgID: ev.msgID, guild: ev.guild, fromBot: ev.fromBot})
	}
}

// resume replays what the client missed after seq, then RESUMED.
func (f *DiscordFake) resume(c *discordConn, s *discordSession, seq int64) {
	if s.conn != nil && s.conn != c {
		s.conn.CloseWith(4000, "Session resumed elsewhere.")
	}
	s.conn, c.session = c, s
	// The client says what it read: everything up to seq.
	if seq > s.acked && seq <= s.seq {
		s.acked = seq
	}
	f.session = s
	c.ready = true
	for _, ev := range s.events {
		if ev.seq > seq {
			f.deliver(c, ev)
		}
	}
	s.seq++
	_ = c.WriteJSON(map[string]any{"op": 0, "t": "RESUMED", "s": s.seq, "d": map[string]any{}})
}
