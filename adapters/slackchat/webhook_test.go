package slackchat_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/adapters/adaptertest"
	"github.com/gatehouse/gatehouse/adapters/slackchat/slacktest"
	"github.com/gatehouse/gatehouse/gateway/chat"
)

// signedPost sends body to the handler as Slack would, signed with secret
// at time at.
func signedPost(t *testing.T, url, secret string, at time.Time, body []byte) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if secret != "" {
		req.Header.Set("X-Slack-Request-Timestamp", strconv.FormatInt(at.Unix(), 10))
		req.Header.Set("X-Slack-Signature", slacktest.SlackSignature(secret, at.Unix(), body))
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, b
}

func eventBody(eventID, channel, user, text string) []byte {
	b, _ := json.Marshal(map[string]any{
		"type": "event_callback", "event_id": eventID, "team_id": "T0FAKETEAM",
		"event": map[string]any{"type": "message", "channel": channel, "channel_type": "channel",
			"user": user, "text": text, "ts": "1700000000.000100"},
	})
	return b
}

func TestWebhookAnswers200OnlyAfterCommit(t *testing.T) {
	rec := newRecorder()
	_, f := slacktest.SlackEventsPair(t, rec)
	release := make(chan struct{})
	rec.setBefore(func(gh.Inbound) { <-release })

	upd := f.Say("room", "alice", "over http", false)
	in := rec.next(t)
	if f.Acked(upd) || len(f.Statuses(upd)) != 0 {
		t.Fatal("Slack got its answer before the event was committed")
	}
	close(release)
	adaptertest.Eventually(t, "200", func() bool { return f.Acked(upd) })
	if got := f.Statuses(upd); !slices.Equal(got, []int{200}) {
		t.Fatalf("statuses %v", got)
	}
	if in.UpdateID != upd || in.Text != "over http" || in.ChatID != f.ChatID("room") || in.UserID != f.UserID("alice") {
		t.Fatalf("inbound: %+v", in)
	}
	noErrors(t, f)
}

func TestWebhookCommitFailureGets500AndTheRetryKeepsTheUpdateID(t *testing.T) {
	rec := newRecorder()
	rec.failures = 1
	_, f := slacktest.SlackEventsPair(t, rec)
	upd := f.Say("room", "alice", "retry me", false)
	first, second := rec.next(t), rec.next(t)
	if first.UpdateID != upd || second.UpdateID != upd {
		t.Fatalf("the retry (X-Slack-Retry-Num: 1) repeats the event_id: %q, %q, want %q", first.UpdateID, second.UpdateID, upd)
	}
	adaptertest.Eventually(t, "acknowledged on the retry", func() bool { return f.Acked(upd) })
	if got := f.Statuses(upd); !slices.Equal(got, []int{500, 200}) {
		t.Fatalf("statuses %v, want [500 200]", got)
	}
	noErrors(t, f)
}

func TestWebhookRefusesUnsignedForgedAndStaleRequests(t *testing.T) {
	rec := newRecorder()
	_, f := slacktest.SlackEventsPair(t, rec)
	url := f.EventsURL()
	body := eventBody("Ev0SIGNED", f.ChatID("room"), f.UserID("alice"), "hi")
	now := time.Now()

	for name, tc := range map[string]struct {
		secret string
		at     time.Time
	}{
		"no signature":        {"", now},
		"wrong secret":        {"not-the-secret", now},
		"six minutes old":     {f.SigningSecret, now.Add(-6 * time.Minute)},
		"six minutes ahead":   {f.SigningSecret, now.Add(6 * time.Minute)},
		"replayed a day late": {f.SigningSecret, now.Add(-24 * time.Hour)},
	} {
		if status, _ := signedPost(t, url, tc.secret, tc.at, body); status != http.StatusUnauthorized {
			t.Errorf("%s: status %d, want 401", name, status)
		}
	}
	// A body changed after signing.
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(eventBody("Ev0SIGNED", f.ChatID("room"), f.UserID("alice"), "evil")))
	req.Header.Set("X-Slack-Request-Timestamp", strconv.FormatInt(now.Unix(), 10))
	req.Header.Set("X-Slack-Signature", slacktest.SlackSignature(f.SigningSecret, now.Unix(), body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("tampered body: status %d, want 401", resp.StatusCode)
	}
	select {
	case in := <-rec.in:
		t.Fatalf("a refused request reached Receive: %+v", in)
	default:
	}

	if status, _ := signedPost(t, url, f.SigningSecret, now, body); status != http.StatusOK {
		t.Fatalf("a properly signed event: status %d", status)
	}
	if in := rec.next(t); in.UpdateID != "Ev0SIGNED" || in.Text != "hi" {
		t.Fatalf("inbound: %+v", in)
	}
}

func TestWebhookAnswersURLVerification(t *testing.T) {
	rec := newRecorder()
	_, f := slacktest.SlackEventsPair(t, rec)
	body := []byte(`{"token":"Jhj5dZrVaK7ZwHHjRyZWjbDl","challenge":"3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P","type":"url_verification"}`)
	status, resp := signedPost(t, f.EventsURL(), f.SigningSecret, time.Now(), body)
	var got struct{ Challenge string }
	if status != http.StatusOK || json.Unmarshal(resp, &got) != nil || got.Challenge != "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" {
		t.Fatalf("challenge: %d %s", status, resp)
	}
	if status, _ := signedPost(t, f.EventsURL(), "wrong", time.Now(), body); status != http.StatusUnauthorized {
		t.Fatalf("an unsigned challenge: %d", status)
	}
}

func TestWebhookPress(t *testing.T) {
	rec := newRecorder()
	a, f := slacktest.SlackEventsPair(t, rec)
	rec.setPress(func(p gh.Press) (chat.PressResult, error) {
		return chat.PressResult{Text: "Already approved by telegram:alice."}, nil
	})
	c := card("g-7")
	id, err := a.Send(context.Background(), chat.Outgoing{Address: gh.Address{ChatID: f.ChatID("dm-bob")}, Text: c.Text, Card: c})
	if err != nil {
		t.Fatal(err)
	}
	reply, err := f.Press("dm-bob", id, c.Buttons[1].Data, "bob")
	if err != nil || reply != "Already approved by telegram:alice." {
		t.Fatalf("press over HTTP: %q, %v", reply, err)
	}
	if p := rec.nextPress(t); p.GateID != "g-7" || p.Choice != chat.ChoiceDeny || p.UserID != f.UserID("bob") || p.ThreadID != "" {
		t.Fatalf("press: %+v", p)
	}
	noErrors(t, f)
}

func TestEventsModeConnectOnlyWaits(t *testing.T) {
	rec := newRecorder()
	a, f := slacktest.SlackEventsPair(t, rec)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- a.Connect(ctx, rec) }()
	upd := f.Say("room", "alice", "still over http", false)
	if in := rec.next(t); in.UpdateID != upd {
		t.Fatalf("inbound: %+v", in)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Connect did not return")
	}
	if f.Connections() != 0 {
		t.Fatal("Events API mode opened a socket")
	}
	resp, err := http.Get(f.EventsURL())
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Fatalf("GET: %d", resp.StatusCode)
	}
}
