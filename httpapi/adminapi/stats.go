package adminapi

import (
	"net/http"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/store"
)

// Windows are the charts' spans: each is counted in fixed buckets, so a
// reply has a bounded size whatever the activity.
var windows = map[string]struct{ span, step time.Duration }{
	"1h":  {time.Hour, time.Minute},
	"24h": {24 * time.Hour, 30 * time.Minute},
}

// StatsBucket is one bucket of the charts: what happened in
// [Start, Start+step).
type StatsBucket struct {
	Start time.Time `json:"start"`
	// Receives counts platform messages by outcome (handed_on, dropped).
	Receives map[string]int64 `json:"receives"`
	// Turns counts runs settled by state (done, failed, cancelled).
	Turns map[string]int64 `json:"turns"`
	// TurnP95Ms is the 95th percentile of those runs' time from queued to
	// settled, in milliseconds (0 without turns).
	TurnP95Ms int64 `json:"turnP95Ms"`
	// GatesOpened counts approvals and questions opened.
	GatesOpened int64 `json:"gatesOpened"`
	// GatesDecided counts gates decided by outcome (approved, denied,
	// answered, expired).
	GatesDecided map[string]int64 `json:"gatesDecided"`
	// ModelCalls counts ledger rows; SpendUSD sums their cost.
	ModelCalls int64   `json:"modelCalls"`
	SpendUSD   float64 `json:"spendUsd"`
}

// StatsTotals sums a window's buckets (a percentile does not sum, so no
// p95 here).
type StatsTotals struct {
	Receives     map[string]int64 `json:"receives"`
	Turns        map[string]int64 `json:"turns"`
	GatesOpened  int64            `json:"gatesOpened"`
	GatesDecided map[string]int64 `json:"gatesDecided"`
	ModelCalls   int64            `json:"modelCalls"`
	SpendUSD     float64          `json:"spendUsd"`
}

// StatsReply is GET /v1/admin/stats.
type StatsReply struct {
	Window      string        `json:"window"`
	Since       time.Time     `json:"since"`
	Until       time.Time     `json:"until"`
	StepSeconds int64         `json:"stepSeconds"`
	Buckets     []StatsBucket `json:"buckets"`
	Totals      StatsTotals   `json:"totals"`
}

// zeros are the keys every bucket shows, at 0 when nothing happened, so a
// chart's series are there from the start.
func zeros(keys ...string) map[string]int64 {
	m := make(map[string]int64, len(keys))
	for _, k := range keys {
		m[k] = 0
	}
	return m
}

func receiveKeys() map[string]int64 { return zeros(chat.ReceiveHandedOn, chat.ReceiveDropped) }
func turnKeys() map[string]int64 {
	return zeros(string(gh.RunDone), string(gh.RunFailed), string(gh.RunCancelled))
}
func decidedKeys() map[string]int64 {
	return zeros(string(gh.GateApproved), string(gh.GateDenied), string(gh.GateAnswered), string(gh.GateExpired))
}

// Stats is GET /v1/admin/stats?window=1h|24h: the window's activity in
// buckets (1 minute for the hour, 30 minutes for the day), aligned to the
// step so refreshes agree; the last bucket is the one under way.
func (a *API) Stats(w http.ResponseWriter, r *http.Request) {
	name := r.URL.Query().Get("window")
	if name == "" {
		name = "1h"
	}
	win, ok := windows[name]
	if !ok {
		a.cfg.WriteError(w, r, gh.Errorf(gh.CodeInvalid, "window must be 1h or 24h, not %q", name))
		return
	}
	until := a.cfg.Now().UTC().Truncate(win.step).Add(win.step)
	q := store.StatsQuery{Since: until.Add(-win.span), Until: until, Step: win.step}
	st, err := a.cfg.Store.Stats(r.Context(), q)
	if err != nil {
		a.cfg.WriteError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, reply(name, q, st))
}

// reply lays the store's sparse rows out as one bucket per step.
func reply(name string, q store.StatsQuery, st store.Stats) StatsReply {
	n := q.Buckets()
	out := StatsReply{Window: name, Since: q.Since, Until: q.Until, StepSeconds: int64(q.Step / time.Second), Buckets: make([]StatsBucket, n),
		Totals: StatsTotals{Receives: receiveKeys(), Turns: turnKeys(), GatesDecided: decidedKeys()}}
	for i := range out.Buckets {
		out.Buckets[i] = StatsBucket{Start: q.Since.Add(time.Duration(i) * q.Step), Receives: receiveKeys(), Turns: turnKeys(), GatesDecided: decidedKeys()}
	}
	in := func(i int) bool { return i >= 0 && i < n }
	for _, c := range st.Receives {
		if in(c.Bucket) {
			out.Buckets[c.Bucket].Receives[c.Key] += c.Count
			out.Totals.Receives[c.Key] += c.Count
		}
	}
	for _, c := range st.Turns {
		if in(c.Bucket) {
			out.Buckets[c.Bucket].Turns[c.Key] += c.Count
			out.Totals.Turns[c.Key] += c.Count
		}
	}
	for _, v := range st.TurnP95 {
		if in(v.Bucket) {
			out.Buckets[v.Bucket].TurnP95Ms = int64(v.Value)
		}
	}
	for _, c := range st.GatesOpened {
		if in(c.Bucket) {
			out.Buckets[c.Bucket].GatesOpened += c.Count
			out.Totals.GatesOpened += c.Count
		}
	}
	for _, c := range st.GatesDecided {
		if in(c.Bucket) {
			out.Buckets[c.Bucket].GatesDecided[c.Key] += c.Count
			out.Totals.GatesDecided[c.Key] += c.Count
		}
	}
	for _, v := range st.Spend {
		if in(v.Bucket) {
			out.Buckets[v.Bucket].ModelCalls += v.Count
			out.Buckets[v.Bucket].SpendUSD += v.Value
			out.Totals.ModelCalls += v.Count
			out.Totals.SpendUSD += v.Value
		}
	}
	return out
}
