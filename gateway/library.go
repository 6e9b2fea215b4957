package gateway

import (
	"context"
	"encoding/json"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/gateway/outbox"
	"github.com/gatehouse/gatehouse/gateway/people"
	"github.com/gatehouse/gatehouse/gateway/uploads"
	"github.com/gatehouse/gatehouse/store"
)

// library answers /library (package uploads does the work). The chat's
// address is recorded first, as a message's receive records it: the
// outcome of a shared-collection card is told there as a notice, even
// when the command is the first thing the chat ever sent.
func (g *Gateway) library(ctx context.Context, in gh.Inbound) (chat.CommandReply, string, error) {
	if g.cfg.Uploads == nil {
		return chat.CommandReply{Text: "The knowledge library is not enabled on this gateway."}, "/library: no library", nil
	}
	session := chat.SessionFor(in.Platform, in.ChatID, in.ThreadID)
	if err := g.st.InTx(ctx, func(ctx context.Context, tx store.Tx) error { return g.ensureAddress(ctx, tx, in, session) }); err != nil {
		return chat.CommandReply{}, "", err
	}
	text, detail, err := g.cfg.Uploads.Command(ctx, uploads.Request{In: in, SessionID: session, UserKey: people.UserKey(in.Platform, in.UserID), Args: in.Text})
	if err != nil {
		return chat.CommandReply{}, "", err
	}
	return chat.CommandReply{Text: text}, detail, nil
}

// hintable reports whether a file sent with no words is answered with
// how to add it to the library: in a direct chat, from someone admitted,
// when the library is on. (In a group, people send each other files.)
func (g *Gateway) hintable(in gh.Inbound, admitted bool) bool {
	return g.cfg.Uploads != nil && len(in.Files) > 0 && admitted && !in.IsBot && in.ChatType == gh.ChatDM
}

// hintLibrary drops a file sent with no words, as unsupported, and
// answers how to add it: never added unasked, never dropped unanswered.
func (g *Gateway) hintLibrary(ctx context.Context, tx store.Tx, res *chat.ReceiveResult, e store.ReceiveEntry, in gh.Inbound) error {
	session := chat.SessionFor(in.Platform, in.ChatID, in.ThreadID)
	if err := g.ensureAddress(ctx, tx, in, session); err != nil {
		return err
	}
	row, err := g.dropRow(ctx, tx, res, e, chat.ReasonUnsupported, clip(in.Unsupported+"; told how to add it with /library", maxFieldLen), session, 0)
	if err != nil {
		return err
	}
	payload, err := json.Marshal(outbox.Text{Text: uploads.Hint(in.Platform, in.Files)})
	if err != nil {
		return gh.Wrap(gh.CodeInternal, err, "encode the library hint")
	}
	now := g.cfg.Now().UTC()
	_, err = tx.EnqueueOutbox(ctx, store.OutboxEntry{SessionID: session, Seq: -row.ID, Platform: in.Platform, Kind: store.OutboxMessage,
		Payload: payload, AvailableAt: now, Created: now})
	return err
}

// ensureAddress records the chat's address and session in tx when they
// are new.
func (g *Gateway) ensureAddress(ctx context.Context, tx store.Tx, in gh.Inbound, session string) error {
	now := g.cfg.Now().UTC()
	addr := store.AddressEntry{SessionID: session, UserID: in.UserID, Updated: now,
		Address: gh.Address{Platform: in.Platform, ChatID: in.ChatID, ThreadID: in.ThreadID, ChatType: in.ChatType, ReplyTo: in.MessageID}}
	if _, known, _, err := tx.TouchChat(ctx, addr, now); err != nil || known {
		return err
	}
	if _, created, err := tx.UpsertAddress(ctx, addr); err != nil || !created {
		return err
	}
	_, _, err := tx.CreateSession(ctx, gh.Session{ID: session, Tenant: gh.DefaultTenant, Title: in.Platform + " chat", Created: now})
	return err
}

// Fetcher returns the adapter that fetches files sent on platform
// (uploads.Config.Fetcher); false when the platform is not served or its
// adapter cannot fetch.
func (g *Gateway) Fetcher(platform string) (chat.FileFetcher, bool) {
	f, ok := g.adapters[platform].(chat.FileFetcher)
	return f, ok
}
