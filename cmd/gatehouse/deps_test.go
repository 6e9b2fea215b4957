package main

import (
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/internal/testing/chaos"
	"github.com/gatehouse/gatehouse/internal/testing/smtptest"
	"github.com/gatehouse/gatehouse/internal/testing/testenv"
)

// Dependencies fail and come back, under a stream of messages and presses:
// a private Postgres cluster is restarted (pg_ctl stop -m fast / start), a
// private Redis is killed and started again empty, and the SMTP server and
// the model API go away for GATEHOUSE_TEST_OUTAGE (default 15s). The
// gateway — one process, never restarted — keeps answering /livez,
// reports not-ready while the store is gone and ready after, and at the
// end every acknowledged message is in the log and answered, every
// acknowledged press agrees with the one decision recorded, and no card
// sent more than one mail.
func TestDepsFailAndComeBack(t *testing.T) {
	outage := 15 * time.Second
	if v := os.Getenv("GATEHOUSE_TEST_OUTAGE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("GATEHOUSE_TEST_OUTAGE: %v", err)
		}
		outage = d
	}
	pg := chaos.StartPostgres(t)
	rd := chaos.StartRedis(t)
	mail := smtptest.Start(t)
	smtpLink := chaos.NewLink(t, mail.Addr)
	model := chaos.NewEmailModel(t)
	modelLink := chaos.NewLink(t, model.Addr)

	p := start(t,
		"GATEHOUSE_DATABASE_URL="+pg.URL, "GATEHOUSE_REDIS_URL="+rd.URL(),
		"GATEHOUSE_MODEL=openai:test-model", "OPENAI_API_KEY=test-key", "OPENAI_BASE_URL=http://"+modelLink.Addr+"/v1",
		"GATEHOUSE_SMTP_URL=smtp://"+smtpLink.Addr+"?tls=none", "GATEHOUSE_EMAIL_FROM=agent@example.com",
		"GATEHOUSE_CONTACTS=Sara=sara@example.com",
		"GATEHOUSE_LEASE_TTL=2s", "GATEHOUSE_MODEL_RETRIES=1", "GATEHOUSE_MODEL_TIMEOUT=20s",
		// A model outage costs attempts: enough of them that every turn
		// outlives it (an operator sizes these to the outages they ride out).
		"GATEHOUSE_MAX_ATTEMPTS=1000", "GATEHOUSE_RETRY_BACKOFF=200ms",
		"GATEHOUSE_APPROVAL_TIMEOUT=30m",
	)
	pid := p.cmd.Process.Pid
	base := "http://" + p.addr
	if code := chaos.Probe(base + "/readyz"); code != 200 {
		t.Fatalf("/readyz at start: %d", code)
	}

	// /livez is watched for the whole test: it must never fail.
	var livezFail atomic.Value
	stopWatch := make(chan struct{})
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		for {
			select {
			case <-stopWatch:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if code := chaos.Probe(base + "/livez"); code != 200 && livezFail.Load() == nil {
				livezFail.Store(fmt.Sprintf("/livez answered %d at %s", code, time.Now().Format(time.TimeOnly)))
			}
		}
	}()

	// The stream: one message every 500ms, each in its own session, each
	// asking for a mail that needs a card; its card gets two presses at
	// once (approve from the API, deny from the web), retried on errors.
	c := &chaos.Client{Base: base, Deadline: time.Now().Add(6 * time.Minute), Quit: make(chan struct{})}
	t.Cleanup(func() { close(c.Quit) }) // a failed test stops its clients
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		results []*chaos.Result
	)
	stop := make(chan struct{})
	streaming := make(chan struct{})
	go func() {
		defer close(streaming)
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			case <-time.After(500 * time.Millisecond):
			}
			r := &chaos.Result{N: n}
			mu.Lock()
			results = append(results, r)
			mu.Unlock()
			wg.Go(func() { c.Drive(r) })
		}
	}()
	takeDepsAway(t, base, pg, rd, smtpLink, modelLink, outage)
	time.Sleep(2 * time.Second) // and a little of the calm after
	close(stop)
	<-streaming
	wg.Wait()
	close(stopWatch)
	<-watched
	if t.Failed() {
		return
	}

	if v := livezFail.Load(); v != nil {
		t.Errorf("liveness failed while dependencies came and went: %s", v)
	}
	select {
	case err := <-p.done:
		t.Fatalf("the gateway exited: %v", err)
	default:
	}
	if p.cmd.Process.Pid != pid {
		t.Fatalf("the gateway was restarted")
	}
	if code := chaos.Probe(base + "/readyz"); code != 200 {
		t.Errorf("/readyz after everything came back: %d", code)
	}

	// Counting, with every dependency up.
	mails := map[string]int{}
	for _, m := range mail.Mails() {
		mails[m.Subject]++
	}
	var acked, decided, approved, sent, unsent int
	for _, r := range results {
		if r.Err != nil {
			t.Errorf("message %d: %v", r.N, r.Err)
			continue
		}
		acked++
		sid := r.Session()
		evs, err := c.Events(sid)
		if err != nil {
			t.Fatalf("events of %s: %v", sid, err)
		}
		l := chaos.ReadLog(evs)
		users, answers, decisions, result := l.Users, len(l.Answers), l.Decisions, l.Result
		if users != 1 || answers < 1 {
			t.Errorf("%s: acknowledged input in the log %d times, answered %d times; want 1 and at least 1", sid, users, answers)
		}
		if len(decisions) != 1 {
			t.Errorf("%s: %d gate.decided events, want 1 (%d presses acknowledged)", sid, len(decisions), len(r.Presses))
			continue
		}
		d := decisions[0]
		decided++
		wins := 0
		for _, pr := range r.Presses {
			if pr.Decision != string(d.Decision) || pr.Surface != d.Surface {
				t.Errorf("%s: a press was told %s on %s, the log says %s on %s", sid, pr.Decision, pr.Surface, d.Decision, d.Surface)
			}
			if pr.Won {
				wins++
			}
		}
		if wins > 1 || len(r.Presses) == 0 {
			t.Errorf("%s: %d presses acknowledged, %d told they won", sid, len(r.Presses), wins)
		}
		got := mails[r.Subject()]
		switch {
		case got > 1:
			t.Errorf("%s: %d mails for one card", sid, got)
		case d.Decision != gh.GateApproved && got != 0:
			t.Errorf("%s: %s, yet %d mail sent", sid, d.Decision, got)
		case d.Decision == gh.GateApproved && result != nil && !result.IsError && got != 1:
			t.Errorf("%s: approved and sent (%q), but %d mails arrived", sid, result.Content, got)
		}
		if d.Decision == gh.GateApproved {
			approved++
			if got == 1 {
				sent++
			} else {
				unsent++
			}
		}
	}
	t.Logf("%d messages acknowledged and answered, %d decisions, %d approved: %d mails sent, %d not sent (SMTP down, reported); the clients retried %d requests", acked, decided, approved, sent, unsent, c.Retries.Load())
	if acked == 0 || approved == 0 {
		t.Errorf("the stream proved nothing: %d acknowledged, %d approved", acked, approved)
	}
	p.stopWith(t, syscall.SIGTERM)
}

// takeDepsAway takes the dependencies away and brings them back, checking the
// probes as it goes.
func takeDepsAway(t *testing.T, base string, pg *chaos.Postgres, rd *chaos.Redis, smtpLink, modelLink *chaos.Link, outage time.Duration) {
	time.Sleep(3 * time.Second)
	t.Log("stopping Postgres")
	pg.Ctl(t, "stop", "-m", "fast")
	testenv.EventuallyWithin(t, time.Minute, "/readyz 503 with Postgres down", func() bool { return chaos.Probe(base+"/readyz") == 503 })
	time.Sleep(5 * time.Second)
	if code := chaos.Probe(base + "/readyz"); code != 503 {
		t.Errorf("/readyz with Postgres still down: %d", code)
	}
	t.Log("starting Postgres")
	pg.Start(t)
	testenv.EventuallyWithin(t, time.Minute, "/readyz 200 with Postgres back", func() bool { return chaos.Probe(base+"/readyz") == 200 })

	time.Sleep(2 * time.Second)
	t.Log("killing Redis")
	rd.Kill(t)
	testenv.EventuallyWithin(t, time.Minute, "/readyz 503 with Redis down", func() bool { return chaos.Probe(base+"/readyz") == 503 })
	time.Sleep(3 * time.Second)
	t.Log("starting Redis, empty")
	rd.Start(t)
	testenv.EventuallyWithin(t, time.Minute, "/readyz 200 with Redis back", func() bool { return chaos.Probe(base+"/readyz") == 200 })

	time.Sleep(2 * time.Second)
	t.Logf("SMTP server and model API down for %s", outage)
	smtpLink.Down()
	modelLink.Down()
	time.Sleep(outage)
	if code := chaos.Probe(base + "/readyz"); code != 200 {
		t.Errorf("/readyz with only SMTP and the model down: %d; they are not the store", code)
	}
	smtpLink.Up(t)
	modelLink.Up(t)
	t.Log("everything is back")
}
