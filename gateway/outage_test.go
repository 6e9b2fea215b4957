package gateway_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/adapters/adaptertest"
	"github.com/gatehouse/gatehouse/adapters/telegram"
	"github.com/gatehouse/gatehouse/adapters/telegram/telegramtest"
	"github.com/gatehouse/gatehouse/gateway"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/gateway/outbox"
	"github.com/gatehouse/gatehouse/internal/testing/stacktest"
	"github.com/gatehouse/gatehouse/internal/testing/testenv"
	"github.com/gatehouse/gatehouse/store"
)

// outage is a loopback proxy in front of the Telegram fake, as a
// self-hosted Bot API server or a proxy sits in front of Telegram: it
// forwards every call until it goes down, and then refuses every
// connection at once (nothing listens on its port) until it comes up
// again on the same address.
type outage struct {
	URL  string
	addr string
	fwd  http.Handler
	mu   sync.Mutex
	srv  *http.Server
}

func newOutage(t adaptertest.TB, upstream string) *outage {
	u, err := url.Parse(upstream)
	if err != nil {
		t.Fatalf("%v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("%v", err)
	}
	o := &outage{addr: ln.Addr().String(), fwd: httputil.NewSingleHostReverseProxy(u)}
	o.URL = "http://" + o.addr
	o.serve(ln)
	t.Cleanup(o.down)
	return o
}

func (o *outage) serve(ln net.Listener) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.srv = &http.Server{Handler: o.fwd}
	go o.srv.Serve(ln)
}

// down closes the listener and every connection: each later call is
// refused at once.
func (o *outage) down() {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.srv != nil {
		o.srv.Close()
		o.srv = nil
	}
}

// up listens on the same address again.
func (o *outage) up(t *testing.T) {
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		t.Fatalf("listen again on %s: %v", o.addr, err)
	}
	o.serve(ln)
}

// allowed is how many waits of p fit in d, one after another, from the
// shortest each can be (Policy.Min): the most retries p lets a loop make
// in d.
func allowed(p interface{ Min(int) time.Duration }, d time.Duration) int {
	n := 0
	for sum := time.Duration(0); ; n++ {
		sum += p.Min(n + 1)
		if sum > d {
			return n
		}
	}
}

// When the platform fails every call at once, the dispatcher does not
// retry every pending row as fast as each row's own backoff lets it: after
// the first failed round it sends one row at a time, waiting
// outbox.DispatchPolicy (Poll doubling to 30s) between failures, and each
// row waits outbox.RetryPolicy (2s doubling to 5m) between its own tries.
// Once the platform answers again every row goes out.
func TestOutboxBacksOffWhenThePlatformFailsEverySend(t *testing.T) {
	var fake *telegramtest.TelegramFake
	var cut *outage
	e := stacktest.NewEnv(t, func(tb adaptertest.TB) (chat.Adapter, adaptertest.Fake) {
		fake = telegramtest.NewTelegram(tb, telegramtest.TelegramOptions{})
		cut = newOutage(tb, fake.URL)
		a, err := telegram.New(telegram.Config{Token: fake.Token, APIURL: cut.URL, PollTimeout: time.Second,
			Logger: slog.New(slog.NewTextHandler(adaptertest.LogWriter(tb), nil))})
		if err != nil {
			tb.Fatalf("telegram adapter: %v", err)
		}
		return a, fake
	}, stacktest.EnvOptions{})
	e.Eventually("connected", func() bool { return state(e, gh.PlatformTelegram).State == gateway.StateConnected })

	// Twelve chats with a reply each waiting when the platform goes down.
	const chats = 12
	var sessions []string
	now := time.Now().UTC()
	for i := range chats {
		id := fake.ChatID(fmt.Sprintf("chat%d", i))
		s := chat.SessionFor(gh.PlatformTelegram, id, "")
		if _, _, err := e.Store.UpsertAddress(e.Ctx, store.AddressEntry{SessionID: s, Address: gh.Address{Platform: gh.PlatformTelegram, ChatID: id, ChatType: gh.ChatDM}, Updated: now}); err != nil {
			t.Fatal(err)
		}
		sessions = append(sessions, s)
	}
	cut.down()
	start := time.Now()
	// All due at one moment, so one round finds them all: the most the
	// first round can send at once.
	due := start.Add(300 * time.Millisecond).UTC()
	payload, _ := json.Marshal(outbox.Text{Text: "after the outage"})
	for _, s := range sessions {
		if ok, err := e.Store.EnqueueOutbox(e.Ctx, store.OutboxEntry{SessionID: s, Seq: 1000, Platform: gh.PlatformTelegram, Kind: store.OutboxMessage,
			Payload: payload, AvailableAt: due, Created: due}); err != nil || !ok {
			t.Fatalf("enqueue: %v %v", ok, err)
		}
	}
	time.Sleep(3 * time.Second)

	// Read the tries (every failed send counts one on its row), then bound
	// them by the time they took.
	rows, err := e.Store.ListOutbox(e.Ctx, store.OutboxFilter{Platform: gh.PlatformTelegram, Limit: 100})
	window := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	sends := 0
	for _, r := range rows {
		sends += r.Attempts
	}
	// Until the first failure, every chat's row may go out (the pacing
	// spaces them); after it, one send per DispatchPolicy wait. Each row
	// retrying on its own, as before, would make 2 tries a row here.
	maxSends := chats + allowed(outbox.DispatchPolicy(50*time.Millisecond), window)
	// Each row: its first try, then one per RetryPolicy wait.
	maxPerRow := 1 + allowed(outbox.RetryPolicy, window)
	t.Logf("%d sends in %s to a platform refusing every connection (at most %d allowed; a row at most %d)", sends, window.Round(time.Millisecond), maxSends, maxPerRow)
	if sends < 2 {
		t.Fatalf("%d send(s) to the failing platform: nothing came after the first failure, the test did not test the backoff", sends)
	}
	if sends > maxSends {
		t.Fatalf("%d sends in %s to a platform failing every call: the dispatcher's backoff allows at most %d", sends, window, maxSends)
	}
	for _, r := range rows {
		if r.Attempts > maxPerRow {
			t.Fatalf("row %s/%d tried %d times in %s: its backoff allows at most %d", r.SessionID, r.Seq, r.Attempts, window, maxPerRow)
		}
		if r.State == store.OutboxDead {
			t.Fatalf("row %s/%d is a dead letter after %d attempts in a %s outage: %s", r.SessionID, r.Seq, r.Attempts, window, r.LastError)
		}
	}
	if st := state(e, gh.PlatformTelegram); st.State != gateway.StateRetrying {
		t.Errorf("the platform failing every call shows %s, want retrying", st.State)
	}

	// The platform answers again: every chat gets its reply, once.
	cut.up(t)
	testenv.EventuallyWithin(t, 30*time.Second, "every reply after the outage", func() bool {
		for i := range chats {
			if !slicesContains(texts(fake, fmt.Sprintf("chat%d", i)), "after the outage") {
				return false
			}
		}
		return true
	})
	for i := range chats {
		if got := texts(fake, fmt.Sprintf("chat%d", i)); len(got) != 1 {
			t.Fatalf("chat%d holds %q, want the reply once", i, got)
		}
	}
	e.Eventually("connected again", func() bool { return state(e, gh.PlatformTelegram).State == gateway.StateConnected })
}
