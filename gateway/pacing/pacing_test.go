package pacing

import (
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
)

func TestPacerKeepsEachChatUnderItsLimit(t *testing.T) {
	p := New(Limits{PerChat: time.Second, PerSecond: 30, GroupPerMinute: 20})
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	a := gh.Address{ChatID: "a", ChatType: gh.ChatDM}
	b := gh.Address{ChatID: "b", ChatType: gh.ChatDM}
	if w := p.Reserve(a, t0); w != 0 {
		t.Fatalf("first send waits %s", w)
	}
	if w := p.Reserve(a, t0.Add(100*time.Millisecond)); w < 900*time.Millisecond {
		t.Fatalf("a second send to one chat within a second must wait ~1s, waits %s", w)
	}
	if w := p.Reserve(b, t0.Add(100*time.Millisecond)); w != 0 {
		t.Fatalf("another chat is not held back by the first: waits %s", w)
	}
	if w := p.Reserve(a, t0.Add(1200*time.Millisecond)); w != 0 {
		t.Fatalf("after the interval the chat may send: waits %s", w)
	}
	// A group: at most 20 a minute.
	g := gh.Address{ChatID: "g", ChatType: gh.ChatGroup}
	sent := 0
	for i := range 120 {
		if p.Reserve(g, t0.Add(time.Duration(i)*500*time.Millisecond)) == 0 {
			sent++
		}
	}
	if sent > 20 {
		t.Fatalf("%d sends to one group in a minute, limit 20", sent)
	}
	// A 429's hold keeps the chat quiet until then.
	p.Hold(b, t0.Add(10*time.Second))
	if w := p.Reserve(b, t0.Add(5*time.Second)); w < 4*time.Second {
		t.Fatalf("a held chat must wait out the 429: waits %s", w)
	}
}
