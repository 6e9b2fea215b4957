package slackchat

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"mime"
	"net/http"
	"net/url"
	"time"

	slackgo "github.com/slack-go/slack"

	"github.com/gatehouse/gatehouse/gateway/chat"
)

// maxBody bounds a request body; Slack's event and interaction payloads
// are a few kilobytes.
const maxBody = 1 << 20

// pressWork bounds recording and answering a press after the interaction
// request has been answered.
const pressWork = 15 * time.Second

// Handler serves Slack's Events API, interactivity and slash command
// requests in Events API mode, and is nil in Socket Mode.
//
// Every request must carry a valid v0 signature made with the signing
// secret, with a timestamp less than five minutes off: anything else gets
// 401. An event_callback is answered 200 only after sink.Receive returned
// nil; a failed commit gets 500, so Slack resends it (X-Slack-Retry-Num)
// under the same event_id. A button press is answered 200 at once and then
// handed to sink.Press. A slash command (a form with command=) goes to
// sink.Command and is answered in the response body.
func (a *Adapter) Handler(sink chat.Sink) http.Handler {
	if a.mode != modeEvents {
		return nil
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
		if err != nil {
			var tooBig *http.MaxBytesError
			if errors.As(err, &tooBig) {
				http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
				return
			}
			http.Error(w, "cannot read body", http.StatusBadRequest)
			return
		}
		if err := a.verify(r.Header, body); err != nil {
			a.log.Warn("refused an unsigned or stale request", "remote", r.RemoteAddr, "err", err)
			http.Error(w, "invalid signature", http.StatusUnauthorized)
			return
		}
		ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
		if ct == "application/x-www-form-urlencoded" {
			a.serveInteraction(w, r, sink, body)
			return
		}
		a.serveEvent(w, r, sink, body)
	})
}

// verify checks Slack's signature over the raw body; the verifier also
// refuses a timestamp more than five minutes away from now, which stops a
// captured request from being replayed later.
func (a *Adapter) verify(h http.Header, body []byte) error {
	sv, err := slackgo.NewSecretsVerifier(h, a.cfg.SigningSecret)
	if err != nil {
		return err
	}
	if _, err := sv.Write(body); err != nil {
		return err
	}
	return sv.Ensure()
}

func (a *Adapter) serveEvent(w http.ResponseWriter, r *http.Request, sink chat.Sink, body []byte) {
	var outer outerEvent
	if err := json.Unmarshal(body, &outer); err != nil {
		http.Error(w, "unreadable event", http.StatusBadRequest)
		return
	}
	switch outer.Type {
	case "url_verification":
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]string{"challenge": outer.Challenge})
		return
	case "event_callback":
	default:
		// app_rate_limited and whatever Slack adds later: nothing to do.
		w.WriteHeader(http.StatusOK)
		return
	}
	self := a.knownBotUserID(r.Context())
	in, ok, err := parseEvent(body, self, a.now())
	if err != nil {
		// A resend would carry the same bytes: refuse it for good.
		a.log.Warn("unreadable event", "err", err)
		http.Error(w, "unreadable event", http.StatusBadRequest)
		return
	}
	if ok {
		// Slack may hang up after 3 s; a library command's answer is
		// still posted.
		ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), libraryWork)
		defer cancel()
		if err := a.receiveMessage(ctx, sink, in, self); err != nil {
			a.log.Warn("event not committed; Slack will resend it", "event", in.UpdateID,
				"retry", r.Header.Get("X-Slack-Retry-Num"), "err", err)
			http.Error(w, "not committed", http.StatusInternalServerError)
			return
		}
	}
	w.WriteHeader(http.StatusOK)
}

// serveInteraction acknowledges a press at once (Slack shows the presser
// an error after 3 s without an answer) and then records and answers it.
func (a *Adapter) serveInteraction(w http.ResponseWriter, r *http.Request, sink chat.Sink, body []byte) {
	form, err := url.ParseQuery(string(body))
	if err != nil {
		http.Error(w, "unreadable form", http.StatusBadRequest)
		return
	}
	if form.Get("command") != "" {
		a.serveCommand(w, r, sink, form)
		return
	}
	payload := form.Get("payload")
	if payload == "" {
		// Another signed request we do not handle: answered, so that
		// Slack shows no error.
		w.WriteHeader(http.StatusOK)
		return
	}
	w.WriteHeader(http.StatusOK)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	// Slack may hang up once it has its 200; the press must still be
	// recorded and answered.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), pressWork)
	defer cancel()
	a.handlePress(ctx, sink, []byte(payload))
}

// serveCommand answers a slash command in the response body, the message
// the user sees (an empty 200 shows nothing). Slack waits 3 s for it and
// never resends the command.
func (a *Adapter) serveCommand(w http.ResponseWriter, r *http.Request, sink chat.Sink, form url.Values) {
	resp := a.answerCommand(r.Context(), sink, commandFromForm(form))
	if resp == nil {
		w.WriteHeader(http.StatusOK)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	_ = json.NewEncoder(w).Encode(resp)
}
