package discord_test

import (
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/adapters/discord/discordtest/signed"
)

// A genuinely signed press whose timestamp is 6 minutes old, or 6 minutes
// ahead, is refused 401 like a bad signature and decides nothing; one 4
// minutes old is taken. The fake signs with the real time; the adapter's
// clock (Config.Now) is what is moved.
func TestEndpointRefusesStaleSignatures(t *testing.T) {
	t.Parallel()
	var skew atomic.Int64 // the adapter's clock minus the real one
	env, f := endpointStack(t, 0, func() time.Time { return time.Now().Add(time.Duration(skew.Load())) })
	card, approve, _ := pendingCard(t, env, f)
	for _, c := range []struct {
		name string
		skew time.Duration
	}{{"6 minutes old", 6 * time.Minute}, {"6 minutes ahead", -6 * time.Minute}} {
		skew.Store(int64(c.skew))
		status, err := f.PressForged("room", card.ID, approve, "alice", signed.Genuine)
		if err != nil || status != http.StatusUnauthorized {
			t.Errorf("a signed press %s: status %d, %v; want 401", c.name, status, err)
		}
	}
	time.Sleep(200 * time.Millisecond) // what a stale press could have set going
	if gate := gateOf(t, env, approve); gate.State != gh.GatePending || env.Posted.Load() != 0 {
		t.Fatalf("after stale presses the gate is %s and the tool ran %d times; want pending, never", gate.State, env.Posted.Load())
	}
	if m := cardNow(t, f, card.ID); len(m.Buttons) != len(card.Buttons) || m.Edited {
		t.Fatalf("a stale press changed the card: %+v", m)
	}

	skew.Store(int64(4 * time.Minute))
	reply, err := f.Press("room", card.ID, approve, "alice")
	if err != nil || !strings.Contains(reply, "Approved by") {
		t.Fatalf("a press signed 4 minutes ago: %q, %v; want the decided card", reply, err)
	}
	env.Eventually("the approved tool to run", func() bool { return env.Posted.Load() == 1 })
	noErrors(t, f)
}
