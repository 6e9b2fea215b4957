package discord

import (
	"bytes"
	"context"
	"crypto/ed25519"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"

	"github.com/gatehouse/gatehouse/gateway/chat"
)

// Discord's HTTP interactions endpoint: the alternative to receiving
// INTERACTION_CREATE over the gateway socket. Discord POSTs each
// interaction, signed with the application's Ed25519 key, and takes the
// response body as the interaction's answer; it must come within 3 s.
// An interaction goes to the endpoint when one is set in the developer
// portal, and over the socket otherwise: never to both.

// maxInteractionBody bounds an interaction's body. Discord's are a few
// kilobytes (a message with its components, resolved users).
const maxInteractionBody = 1 << 20

// maxSignatureAge is how far a signed interaction's timestamp may be from
// now, either way, as Slack's v0 signatures allow: a signature proves who
// sent the request, not when, so without it a captured request could be
// replayed for ever.
const maxSignatureAge = 5 * time.Minute

// followUpWork bounds the REST call that delivers a deferred answer.
const followUpWork = 15 * time.Second

// Answers the presser sees when there is nothing better to say.
const (
	commandRepeated = "This command was already answered."
	reasonTooSlow   = "Gatehouse took too long to open the form. Press \"Deny with reason…\" again."
)

// parsePublicKey reads the application's public key: 32 bytes in hex,
// as the developer portal shows it. Empty is no key (no endpoint).
func parsePublicKey(hexKey string) (ed25519.PublicKey, error) {
	hexKey = strings.TrimSpace(hexKey)
	if hexKey == "" {
		return nil, nil
	}
	b, err := hex.DecodeString(hexKey)
	if err != nil || len(b) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("discord: public key (DISCORD_PUBLIC_KEY) must be the %d hex characters the developer portal shows under General Information → Public Key; got %d characters",
			2*ed25519.PublicKeySize, len(hexKey))
	}
	return ed25519.PublicKey(b), nil
}

// Handler serves Discord's interactions endpoint (mounted at
// /hooks/discord) when Config.PublicKey is set, and is nil otherwise.
//
// Every request must carry X-Signature-Ed25519, the signature of
// X-Signature-Timestamp followed by the body, made with the
// application's key, with a timestamp (unix seconds) less than five
// minutes off: anything else gets 401 (Discord sends badly signed
// requests on purpose to check that). A PING is answered with a PONG.
// A button press, a reason modal's submission or a slash command is
// answered as over the socket (Adapter.answer) when it is decided within
// Config.DeferAfter; otherwise the response is deferred (type 6 for a
// press, type 5 ephemeral for a command) and the answer follows through
// the interaction's webhook: the card edited, or a message only the
// presser sees.
func (a *Adapter) Handler(sink chat.Sink) http.Handler {
	if a.publicKey == nil {
		return nil
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { a.serveInteraction(w, r, sink) })
}

func (a *Adapter) serveInteraction(w http.ResponseWriter, r *http.Request, sink chat.Sink) {
	received := time.Now()
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxInteractionBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "cannot read body", http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	if !discordgo.VerifyInteraction(r, a.publicKey) {
		// Info, not a warning: Discord itself sends these to check the
		// endpoint refuses them.
		a.log.Info("discord interaction with a bad or missing signature refused", "remote", r.RemoteAddr)
		http.Error(w, "invalid request signature", http.StatusUnauthorized)
		return
	}
	if err := checkSignedAt(r.Header.Get("X-Signature-Timestamp"), a.cfg.Now()); err != nil {
		// A warning: genuinely signed, so a replay or a clock that is off.
		a.log.Warn("discord interaction with a stale signature refused", "remote", r.RemoteAddr, "err", err)
		http.Error(w, "invalid request signature", http.StatusUnauthorized)
		return
	}
	var i discordgo.Interaction
	if err := json.Unmarshal(body, &i); err != nil {
		a.log.Warn("discord interaction that cannot be read", "err", err)
		http.Error(w, "unreadable interaction", http.StatusBadRequest)
		return
	}
	switch i.Type {
	case discordgo.InteractionPing:
		writeInteractionResponse(w, &discordgo.InteractionResponse{Type: discordgo.InteractionResponsePong})
		return
	case discordgo.InteractionMessageComponent, discordgo.InteractionModalSubmit, discordgo.InteractionApplicationCommand:
	default:
		// Autocomplete: none of the adapter's commands has options.
		http.Error(w, "interaction type not handled", http.StatusBadRequest)
		return
	}
	if i.ID == "" || i.Token == "" {
		http.Error(w, "interaction without id or token", http.StatusBadRequest)
		return
	}
	a.respondOverHTTP(w, r, sink, &i, received)
}

// respondOverHTTP answers in the response body when the answer is ready
// within DeferAfter of the request's arrival, and otherwise answers
// deferred and sends the answer through the webhook once it is ready.
// The decision itself is never cut short by the deferral: it has
// DeferredTimeout, and the gateway dedups it on the interaction id.
func (a *Adapter) respondOverHTTP(w http.ResponseWriter, r *http.Request, sink chat.Sink, i *discordgo.Interaction, received time.Time) {
	answered := make(chan *discordgo.InteractionResponse, 1)
	// The decision outlives the request when it is deferred.
	ctx := context.WithoutCancel(r.Context())
	a.deferred.Go(func() { answered <- a.answer(ctx, sink, i, a.cfg.DeferredTimeout) })
	wait := time.NewTimer(time.Until(received.Add(a.cfg.DeferAfter)))
	defer wait.Stop()
	select {
	case resp := <-answered:
		writeInteractionResponse(w, orFallback(i, resp))
	case <-wait.C:
		writeInteractionResponse(w, deferredResponse(i))
		a.deferred.Go(func() { a.followUp(i, answered) })
	}
}

// Drain implements chat.Drainer: it waits, within ctx, for the answers
// and follow-ups respondOverHTTP left running past their requests (each
// bounded by DeferredTimeout and followUpWork), so the gateway's Stop, and
// through it the run group, owns them.
func (a *Adapter) Drain(ctx context.Context) error { return a.deferred.Wait(ctx) }

// orFallback is resp, or what to say when answer had nothing to say: an
// HTTP interaction must be answered (the socket path may stay silent).
func orFallback(i *discordgo.Interaction, resp *discordgo.InteractionResponse) *discordgo.InteractionResponse {
	switch {
	case resp != nil:
		return resp
	case i.Type == discordgo.InteractionApplicationCommand:
		return ephemeral(commandRepeated)
	default:
		return ephemeral(pressNoted)
	}
}

// deferredResponse acknowledges an interaction whose answer will follow:
// a press or modal keeps its message as it is (type 6), a command shows
// "thinking…" to its sender alone (type 5, ephemeral) until the answer
// replaces it.
func deferredResponse(i *discordgo.Interaction) *discordgo.InteractionResponse {
	if i.Type == discordgo.InteractionApplicationCommand {
		return &discordgo.InteractionResponse{
			Type: discordgo.InteractionResponseDeferredChannelMessageWithSource,
			Data: &discordgo.InteractionResponseData{Flags: discordgo.MessageFlagsEphemeral},
		}
	}
	return &discordgo.InteractionResponse{Type: discordgo.InteractionResponseDeferredMessageUpdate}
}

// followUp delivers the answer to a deferred interaction: a decided card
// or a command's reply edits the original (the card the press was on,
// or the command's "thinking…" message); text for the presser alone is
// a follow-up message. A modal cannot follow a deferral, so the presser
// is asked to press again.
func (a *Adapter) followUp(i *discordgo.Interaction, answered <-chan *discordgo.InteractionResponse) {
	resp := orFallback(i, <-answered)
	ctx, cancel := context.WithTimeout(context.Background(), followUpWork)
	defer cancel()
	var err error
	switch {
	case resp.Type == discordgo.InteractionResponseUpdateMessage,
		resp.Type == discordgo.InteractionResponseChannelMessageWithSource && i.Type == discordgo.InteractionApplicationCommand:
		_, err = a.rest.InteractionResponseEdit(i, webhookEdit(resp.Data), discordgo.WithContext(ctx))
	case resp.Type == discordgo.InteractionResponseChannelMessageWithSource:
		_, err = a.rest.FollowupMessageCreate(i, true, webhookParams(resp.Data), discordgo.WithContext(ctx))
	default:
		_, err = a.rest.FollowupMessageCreate(i, true, webhookParams(ephemeral(reasonTooSlow).Data), discordgo.WithContext(ctx))
	}
	if err != nil {
		a.log.Error("discord deferred interaction answer failed", "interaction_id", i.ID, "err", err)
	}
}

// webhookEdit is an answer's message as an edit of the original.
func webhookEdit(d *discordgo.InteractionResponseData) *discordgo.WebhookEdit {
	e := &discordgo.WebhookEdit{Content: &d.Content, AllowedMentions: d.AllowedMentions}
	if d.Components != nil {
		e.Components = &d.Components
	}
	return e
}

// webhookParams is an answer's message as a follow-up message.
func webhookParams(d *discordgo.InteractionResponseData) *discordgo.WebhookParams {
	comps := d.Components
	if comps == nil {
		comps = []discordgo.MessageComponent{}
	}
	return &discordgo.WebhookParams{Content: d.Content, Components: comps, Flags: d.Flags, AllowedMentions: d.AllowedMentions}
}

func writeInteractionResponse(w http.ResponseWriter, resp *discordgo.InteractionResponse) {
	body, err := json.Marshal(resp)
	if err != nil {
		http.Error(w, "cannot encode the answer", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(body)
}

// checkSignedAt refuses a signature timestamp (unix seconds) that is not
// a number or is more than maxSignatureAge from now, past or future.
func checkSignedAt(ts string, now time.Time) error {
	sec, err := strconv.ParseInt(strings.TrimSpace(ts), 10, 64)
	if err != nil {
		return fmt.Errorf("timestamp %q is not unix seconds", ts)
	}
	if d := now.Sub(time.Unix(sec, 0)); d > maxSignatureAge || d < -maxSignatureAge {
		return fmt.Errorf("timestamp is %s from now, more than %s", d.Round(time.Second), maxSignatureAge)
	}
	return nil
}
