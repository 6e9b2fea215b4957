package discordtest

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"time"

	"github.com/gatehouse/gatehouse/adapters/adaptertest"
	"github.com/gatehouse/gatehouse/adapters/discord"
	"github.com/gatehouse/gatehouse/adapters/discord/discordtest/formbody"
	"github.com/gatehouse/gatehouse/adapters/discord/discordtest/signed"
	"github.com/gatehouse/gatehouse/adapters/discord/discordtest/wire"
	"github.com/gatehouse/gatehouse/adapters/internal/platformfake"
	"github.com/gatehouse/gatehouse/gateway/chat"
)

// ---- the HTTP interactions endpoint and the interaction webhook ----

// Forgery says how a request to the interactions endpoint departs from a
// genuine one (signed.Genuine, WrongKey, Tampered, Unsigned).
type Forgery = signed.Forgery

// PublicKey is the application's public key, in hex, as the developer
// portal shows it (the adapter's Config.PublicKey).
func (f *DiscordFake) PublicKey() string {
	return hex.EncodeToString(f.signKey.Public().(ed25519.PublicKey))
}

// SetInteractionsURL sets the application's Interactions Endpoint URL:
// from then on every interaction (presses, modal submissions, slash
// commands) is POSTed there, signed, and not sent over the gateway, as
// Discord does. The response body is the interaction's answer; the
// follow-ups come through the webhook routes. "" goes back to the
// gateway. Discord checks a URL before saving it:
// CheckInteractionsEndpoint does the same.
func (f *DiscordFake) SetInteractionsURL(url string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ixURL = url
}

// CheckInteractionsEndpoint does what the developer portal does before it
// saves an Interactions Endpoint URL: a PING signed with the
// application's key must be answered 200 with {"type":1}, and PINGs
// that are badly signed (another key, a changed body, no signature) must
// be refused with 401. It returns what failed.
func (f *DiscordFake) CheckInteractionsEndpoint() error {
	ping, _ := json.Marshal(map[string]any{"id": f.lockedSnowflake(), "application_id": f.appID, "type": 1, "token": "ping-" + f.lockedSnowflake(), "version": 1})
	return signed.CheckEndpoint(ping, f.PostInteraction)
}

// PostInteraction POSTs body to the interactions endpoint as Discord
// would, departing from a genuine request as forgery says, and returns
// the answer. Nothing is recorded.
func (f *DiscordFake) PostInteraction(body []byte, forgery Forgery) (signed.Answer, error) {
	f.mu.Lock()
	url := f.ixURL
	f.mu.Unlock()
	if url == "" {
		return signed.Answer{}, errors.New("discord fake: no interactions endpoint URL is set")
	}
	body, h := signed.Request(f.signKey, body, time.Now(), forgery)
	ctx, cancel := context.WithTimeout(context.Background(), f.cfg.deadline)
	defer cancel()
	return signed.Post(ctx, http.DefaultClient, url, body, h)
}

// PressForged sends what a press of the button data on the bot's message
// msgID in chat by user would send to the interactions endpoint, but
// forged as forgery says (not from Discord), and returns the status the
// endpoint answered. The fake does not record it as an interaction.
func (f *DiscordFake) PressForged(chat, msgID, data, user string, forgery Forgery) (int, error) {
	f.mu.Lock()
	msg, err := f.pressable(chat, msgID, data, user)
	var body []byte
	if err == nil {
		// Not Discord's: it is no interaction of the bot's, so it is
		// built but neither recorded nor sent genuinely.
		ix := &discordInteraction{
			DiscordInteraction: DiscordInteraction{ID: f.snowflake()}, token: "itok-" + f.snowflake(),
			msg: msg, channel: msg.channel, user: f.user(user),
		}
		body, _ = json.Marshal(f.interactionJSON(ix, 3, map[string]any{"custom_id": data, "component_type": 2}))
	}
	f.mu.Unlock()
	if err != nil {
		return 0, err
	}
	ans, err := f.PostInteraction(body, forgery)
	return ans.Status, err
}

// RedeliverInteraction POSTs the interaction ixID to the endpoint again,
// freshly signed, as a retried delivery whose first answer was lost
// would, and returns the answer's type and content. The first answer
// stays the one the fake holds.
func (f *DiscordFake) RedeliverInteraction(ixID string) (typ int, content string, err error) {
	f.mu.Lock()
	ix, ok := f.interactions[ixID]
	var body []byte
	if ok {
		body = ix.payload
	}
	f.mu.Unlock()
	if body == nil {
		return 0, "", fmt.Errorf("discord fake: interaction %s was not sent to the endpoint", ixID)
	}
	ans, err := f.PostInteraction(body, signed.Genuine)
	if err != nil {
		return 0, "", err
	}
	return ans.Response()
}

func (f *DiscordFake) lockedSnowflake() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.snowflake()
}

// canInteract says why an interaction cannot be sent now: over the
// gateway it needs a connected client; the endpoint is always there.
// f.mu held.
func (f *DiscordFake) canInteract() error {
	if f.ixURL != "" {
		return nil
	}
	if f.session == nil || f.session.conn == nil || !f.session.conn.ready {
		return errors.New("discord fake: no gateway client is connected to receive the interaction")
	}
	return nil
}

// dispatchInteraction sends an interaction where Discord would: to the
// endpoint when one is set, else over the gateway. f.mu held.
func (f *DiscordFake) dispatchInteraction(ix *discordInteraction, d map[string]any) {
	if f.ixURL == "" || f.closed {
		f.emit(&discordEvent{t: "INTERACTION_CREATE", d: d})
		return
	}
	ix.HTTP = true
	ix.payload, _ = json.Marshal(d)
	url := f.ixURL
	f.wg.Add(1)
	go f.post(ix, url, ix.payload)
}

// post delivers ix to the endpoint and takes the response body as its
// callback, under Discord's deadline.
func (f *DiscordFake) post(ix *discordInteraction, url string, payload []byte) {
	defer f.wg.Done()
	body, h := signed.Request(f.signKey, payload, time.Now(), signed.Genuine)
	ctx, cancel := context.WithDeadline(context.Background(), ix.deadline)
	defer cancel()
	ans, err := signed.Post(ctx, http.DefaultClient, url, body, h)
	if err != nil {
		return // unanswered: await reports it
	}
	if ans.Status != http.StatusOK {
		f.mu.Lock()
		f.refuse("interaction %s: the endpoint answered a genuine interaction with %d %q", ix.ID, ans.Status, ans.Body)
		f.mu.Unlock()
		return
	}
	// The answer is checked and applied as a callback would be.
	req := httptest.NewRequest(http.MethodPost, "/api/v9/interactions/"+ix.ID+"/"+ix.token+"/callback", bytes.NewReader(ans.Body))
	req.Header.Set("Content-Type", ans.ContentType)
	f.callback(httptest.NewRecorder(), req, ix.ID, ix.token)
}

// serveWebhook answers the interaction webhook's routes: PATCH
// /webhooks/{application.id}/{token}/messages/@original edits the
// original answer (for a press answered with type 6 or 7, the message
// the button was on), POST /webhooks/{application.id}/{token} makes a
// follow-up message (?wait=true returns it). Both need the interaction
// to be answered first and its token under 15 minutes old.
func (f *DiscordFake) serveWebhook(w http.ResponseWriter, r *http.Request, parts []string) {
	original := r.Method == http.MethodPatch && len(parts) == 5 && parts[3] == "messages" && parts[4] == "@original"
	followUp := r.Method == http.MethodPost && len(parts) == 3
	if !original && !followUp {
		f.mu.Lock()
		f.refuse("%s %s: no such webhook route", r.Method, r.URL.Path)
		f.mu.Unlock()
		wire.JSON(w, http.StatusNotFound, map[string]any{"message": "404: Not Found", "code": 0})
		return
	}
	var req formbody.Message
	if !f.readJSON(w, r, &req) {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var ix *discordInteraction
	for _, x := range f.interactions {
		if x.token == parts[2] {
			ix = x
		}
	}
	switch {
	case ix == nil || parts[1] != f.appID || time.Since(ix.created) > 15*time.Minute:
		f.refuse("%s %s: unknown webhook (no interaction with this application and token, or its token is over 15 minutes old)", r.Method, r.URL.Path)
		wire.JSON(w, http.StatusNotFound, map[string]any{"message": "Unknown Webhook", "code": 10015})
		return
	case !ix.Answered:
		f.refuse("%s %s: interaction %s has not been answered yet", r.Method, r.URL.Path, ix.ID)
		wire.JSON(w, http.StatusNotFound, map[string]any{"message": "Unknown Webhook", "code": 10015})
		return
	}
	rows, ok := f.checkBody(w, r, &req)
	if !ok {
		return
	}
	if original {
		f.editOriginal(w, r, ix, &req, rows)
		return
	}
	f.followUp(w, r, ix, &req, rows)
}

// editOriginal edits the interaction's original answer. f.mu held.
func (f *DiscordFake) editOriginal(w http.ResponseWriter, r *http.Request, ix *discordInteraction, req *formbody.Message, rows [][]discordButton) {
	target := ix.reply
	if ix.Type == 6 || ix.Type == 7 {
		target = ix.msg
	}
	if target == nil {
		f.refuse("%s %s: interaction %s has no original message (answered with type %d)", r.Method, r.URL.Path, ix.ID, ix.Type)
		wire.JSON(w, http.StatusNotFound, map[string]any{"message": "Unknown Message", "code": 10008})
		return
	}
	if !f.applyEdit(w, r, target, req, rows) {
		return
	}
	ix.Content = target.content
	ix.Edits++
	ix.settle()
	wire.JSON(w, http.StatusOK, f.messageJSON(target))
}

// followUp makes a follow-up message of the interaction. f.mu held.
func (f *DiscordFake) followUp(w http.ResponseWriter, r *http.Request, ix *discordInteraction, req *formbody.Message, rows [][]discordButton) {
	content := ""
	if req.Content != nil {
		content = *req.Content
	}
	if content == "" && len(rows) == 0 && len(req.Embeds) == 0 {
		f.emptyMessage(w, r)
		return
	}
	if req.Flags&^(64|4) != 0 {
		f.refuse("%s %s: flags %d (only 64 ephemeral and 4 suppress embeds)", r.Method, r.URL.Path, req.Flags)
		wire.FormError(w, "flags", "MESSAGE_FLAGS_INVALID", "Invalid flags")
		return
	}
	m := &discordMsg{id: f.snowflake(), channel: ix.channel, author: f.bot, content: content, rows: rows, created: time.Now()}
	m.show()
	if req.AllowedMentions != nil {
		p := slices.Clone(req.AllowedMentions.Parse)
		m.allowed = &p
	}
	if req.Flags&64 != 0 {
		m.viewer = ix.user
		f.ephemeral[m.id] = m
	} else {
		m.everyone = wire.Pings(content, m.allowed)
		ix.channel.msgs = append(ix.channel.msgs, m)
		f.emitMessage("MESSAGE_CREATE", m)
	}
	if ix.reply == nil {
		ix.reply = m
	}
	ix.Content = content
	ix.FollowUps++
	ix.settle()
	if r.URL.Query().Get("wait") != "true" {
		w.WriteHeader(http.StatusNoContent)
		return
	}
	wire.JSON(w, http.StatusOK, f.messageJSON(m))
}

// DiscordInteractionsFactory is the shared suite's Factory for Discord
// with an interactions endpoint: messages still come over the gateway,
// presses, modal submissions and slash commands are POSTed, signed, to
// the adapter's Handler, served on loopback while Connect runs (the
// gateway mounts it at /hooks/discord in serve).
func DiscordInteractionsFactory(t adaptertest.TB) (chat.Adapter, adaptertest.Fake) {
	t.Helper()
	f := NewDiscord(t)
	a, err := discord.New(discord.Config{
		Token:     f.Token(),
		APIURL:    f.URL(),
		PublicKey: f.PublicKey(),
		Logger:    slog.New(slog.NewTextHandler(NewDiscordLogWriter(t), &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	if err != nil {
		t.Fatalf("discord adapter: %v", err)
	}
	w := &discordEndpoint{Adapter: a, mount: platformfake.Mount{FirstWait: 2 * time.Second}}
	srv := httptest.NewServer(&w.mount)
	t.Cleanup(srv.Close)
	f.SetInteractionsURL(srv.URL)
	return w, f
}

// discordEndpoint is an adapter that serves its interactions Handler,
// with the gateway as sink, while Connect runs.
type discordEndpoint struct {
	*discord.Adapter
	mount platformfake.Mount
}

func (w *discordEndpoint) Connect(ctx context.Context, sink chat.Sink) error {
	return w.mount.While(w.Adapter.Handler(sink), func() error { return w.Adapter.Connect(ctx, sink) })
}
