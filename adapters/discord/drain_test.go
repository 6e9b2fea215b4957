package discord_test

import (
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/adapters/discord"
	"github.com/gatehouse/gatehouse/adapters/discord/discordtest/signed"
	"github.com/gatehouse/gatehouse/gateway/chat"
)

// heldSink holds every press until release is closed.
type heldSink struct {
	chat.Sink
	release chan struct{}
}

func (s heldSink) Press(ctx context.Context, _ gh.Press) (chat.PressResult, error) {
	<-s.release
	return chat.PressResult{}, nil
}

// An interaction answered late over HTTP leaves its answer and follow-up
// running past the request: Drain (the gateway's Stop) waits for them,
// gives up with its context, and returns once the follow-up was sent.
func TestDrainWaitsForADeferredAnswer(t *testing.T) {
	pub, priv, _ := ed25519.GenerateKey(nil)
	var followUps atomic.Int32
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		followUps.Add(1)
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"id":"m1"}`))
	}))
	defer api.Close()
	a, err := discord.New(discord.Config{Token: "t", APIURL: api.URL, PublicKey: hex.EncodeToString(pub),
		DeferAfter: 10 * time.Millisecond, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	var d chat.Drainer = a
	sink := heldSink{release: make(chan struct{})}
	srv := httptest.NewServer(a.Handler(sink))
	defer srv.Close()

	body, _ := json.Marshal(map[string]any{"id": "i1", "application_id": "app", "type": 3, "token": "tok", "channel_id": "c1",
		"member": map[string]any{"user": map[string]any{"id": "u1", "username": "alice"}},
		"data":   map[string]any{"custom_id": chat.ButtonData("g1", chat.ChoiceApprove), "component_type": 2}})
	b, h := signed.Request(priv, body, time.Now(), signed.Genuine)
	ans, err := signed.Post(context.Background(), http.DefaultClient, srv.URL, b, h)
	if err != nil {
		t.Fatal(err)
	}
	if typ, _, err := ans.Response(); err != nil || typ != 6 {
		t.Fatalf("answer type %d, %v: want 6 (deferred)", typ, err)
	}
	short, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := d.Drain(short); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Drain with the answer still held: %v", err)
	}
	close(sink.release)
	if err := d.Drain(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := followUps.Load(); n != 1 {
		t.Fatalf("%d follow-ups sent when Drain returned, want 1", n)
	}
}
