package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/gateway/outbox"
	"github.com/gatehouse/gatehouse/gateway/people"
	"github.com/gatehouse/gatehouse/store"
)

// Pairing (package people): with Config.Pairing on, a stranger who writes
// in a direct chat is sent a one-time code instead of being handed on,
// and an admin lets them in (people.Admin). Here is what needs the
// receive's transaction: who is admitted, who gets a code, and the code's
// reply, whose outbox row commits with the receive row.

// admits reports whether user may talk to the agent on platform and decide
// its approvals: on the allow-list (Config.Allowed), or let in and not
// revoked. It reads r, the receive's transaction or the store.
func (g *Gateway) admits(ctx context.Context, r store.PeopleReader, platform, userID string) (bool, error) {
	if g.Allowed(platform, userID) {
		return true, nil
	}
	if userID == "" {
		return false, nil
	}
	_, ok, err := r.GetPerson(ctx, platform, userID)
	return ok, err
}

// pairable reports whether a stranger's update gets a pairing code: a
// text message from a person in a direct chat. In a group the code would
// be posted for everyone to read, and every stranger there would get one.
func (g *Gateway) pairable(in gh.Inbound, text string) bool {
	return g.cfg.Pairing && in.ChatType == gh.ChatDM && in.UserID != "" && !in.IsBot && in.Unsupported == "" && strings.TrimSpace(text) != ""
}

// pair answers a stranger's message with pairing on: a code sent back
// (once per live code, at most people.PairingCodesPerHour an hour), and the
// message dropped with reason pairing either way.
func (g *Gateway) pair(ctx context.Context, tx store.Tx, res *chat.ReceiveResult, e store.ReceiveEntry, in gh.Inbound, now time.Time) error {
	if live, ok, err := tx.LivePairingCode(ctx, in.Platform, in.UserID, now); err != nil {
		return err
	} else if ok {
		return g.drop(ctx, tx, res, e, chat.ReasonPairing, "code "+live.Code+" (sent "+clock(live.Created)+") is still pending; not sent again", "", 0)
	}
	n, err := tx.CountPairingCodes(ctx, in.Platform, in.UserID, now.Add(-time.Hour))
	if err != nil {
		return err
	}
	if n >= people.PairingCodesPerHour {
		return g.drop(ctx, tx, res, e, chat.ReasonPairing, fmt.Sprintf("no code sent: this sender was given %d in the last hour (the limit)", n), "", 0)
	}
	// The reply needs the chat's address, and the session its outbox row
	// belongs to: the same ones the person's messages use once let in.
	session := chat.SessionFor(in.Platform, in.ChatID, in.ThreadID)
	addr := store.AddressEntry{SessionID: session, UserID: in.UserID, Updated: now,
		Address: gh.Address{Platform: in.Platform, ChatID: in.ChatID, ThreadID: in.ThreadID, ChatType: in.ChatType, ReplyTo: in.MessageID}}
	if _, created, err := tx.UpsertAddress(ctx, addr); err != nil {
		return err
	} else if created {
		if _, _, err := tx.CreateSession(ctx, gh.Session{ID: session, Tenant: gh.DefaultTenant, Title: in.Platform + " chat", Created: now}); err != nil {
			return err
		}
	}
	c := store.PairingCode{Code: people.NewPairingCode(), Platform: in.Platform, UserID: in.UserID, UserName: e.UserName, ChatID: in.ChatID,
		Text: e.Text, Created: now, ExpiresAt: now.Add(people.PairingCodeTTL)}
	if ok, err := tx.InsertPairingCode(ctx, c); err != nil {
		return err // a code drawn twice is a conflict: the receive is tried again
	} else if !ok {
		return errRaced // another receive gave this sender a code meanwhile
	}
	row, err := g.dropRow(ctx, tx, res, e, chat.ReasonPairing, "code "+c.Code+" sent, valid until "+clock(c.ExpiresAt)+
		": approve it under People in /admin or with gatehouse pair approve "+c.Code, session, 0)
	if err != nil {
		return err
	}
	payload, err := json.Marshal(outbox.Text{Text: people.PairingReply(c.Code)})
	if err != nil {
		return gh.Wrap(gh.CodeInternal, err, "encode pairing reply")
	}
	_, err = tx.EnqueueOutbox(ctx, store.OutboxEntry{SessionID: session, Seq: -row.ID, Platform: in.Platform, Kind: store.OutboxMessage,
		Payload: payload, AvailableAt: now, Created: now})
	return err
}

func clock(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") }
