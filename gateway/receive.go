package gateway

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/gateway/people"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/store"
)

const (
	// maxInboundText bounds a message handed on; a longer one is cut
	// here, and the log says so, rather than refused.
	maxInboundText = 32000
	// previewLen is how much of a message the receive log keeps.
	previewLen = 200
	// maxFieldLen bounds the platform ids and names a receive-log row
	// keeps.
	maxFieldLen = chat.MaxIDLen
)

// errRaced is an internal signal: a concurrent receive of the same update
// committed first; the transaction is rolled back and retried, and then
// records a duplicate.
var errRaced = errors.New("receive raced a redelivery")

// Receive implements [chat.Sink]. It records the update in the receive log and,
// when it is handed on, commits its user.message and queues the session's
// run in the same transaction. A nil error means it is committed and the
// platform may be acknowledged.
func (g *Gateway) Receive(ctx context.Context, in gh.Inbound) (chat.ReceiveResult, error) {
	if err := checkInbound(in); err != nil {
		// Malformed for good: an error would make the platform deliver it
		// again and again, holding up the chat behind it. It is logged
		// as unsupported, with what was wrong, under cleaned-up ids.
		g.cfg.Logger.Warn("malformed inbound update dropped as unsupported", "platform", in.Platform, "err", err)
		in = sanitize(in)
		in.Unsupported = "malformed: " + err.Error()
	}
	start := time.Now()
	// "cancel" from someone who may decide a pending card of the chat
	// denies it, as a press would, instead of being handed on.
	if res, ok, err := g.cancelByWord(ctx, in); err != nil {
		g.cfg.Logger.Error("receive of a cancel failed; the platform is not acknowledged and will redeliver", "platform", in.Platform, "update", in.UpdateID, "err", err)
		return chat.ReceiveResult{}, err
	} else if ok {
		g.metrics.receive(in.Platform, res, start)
		return res, nil
	}
	res, err := g.batcher().submit(ctx, in)
	if err != nil {
		g.cfg.Logger.Error("receive failed; the platform is not acknowledged and will redeliver", "platform", in.Platform, "update", in.UpdateID, "err", err)
		return chat.ReceiveResult{}, err
	}
	g.metrics.receive(in.Platform, res, start)
	if res.Outcome == chat.ReceiveHandedOn {
		g.k.Notify(res.SessionID)
	} else {
		if (res.Reason == chat.ReasonPairing || res.Reason == chat.ReasonUnsupported) && res.SessionID != "" {
			g.out.Wake() // a code, or how to add a file, to send
		}
		g.cfg.Logger.Info("dropped inbound update", "platform", in.Platform, "update", in.UpdateID, "reason", res.Reason)
	}
	return res, nil
}

// sanitize makes a malformed update's ids storable: valid text within the
// limit, and an update id derived from its content when it has none.
func sanitize(in gh.Inbound) gh.Inbound {
	clean := func(v string) string {
		v = strings.ToValidUTF8(strings.ReplaceAll(v, "\x00", ""), "\uFFFD")
		for len(v) > maxFieldLen {
			_, size := utf8.DecodeLastRuneInString(v)
			v = v[:len(v)-size]
		}
		return v
	}
	if in.Platform == "" {
		in.Platform = "unknown"
	}
	if in.UpdateID == "" {
		h := sha256.Sum256([]byte(in.ChatID + "\x00" + in.UserID + "\x00" + in.MessageID + "\x00" + in.Text))
		in.UpdateID = "content-" + hex.EncodeToString(h[:8])
	}
	in.Platform, in.UpdateID, in.ChatID, in.ThreadID = clean(in.Platform), clean(in.UpdateID), clean(in.ChatID), clean(in.ThreadID)
	in.UserID, in.MessageID = clean(in.UserID), clean(in.MessageID)
	return in
}

func checkInbound(in gh.Inbound) error {
	for _, f := range []struct{ name, v string }{{"platform", in.Platform}, {"update id", in.UpdateID}} {
		if f.v == "" {
			return gh.Errorf(gh.CodeInvalid, "inbound update has no %s", f.name)
		}
	}
	return checkIDs(field{"platform", in.Platform}, field{"update id", in.UpdateID}, field{"chat id", in.ChatID},
		field{"thread id", in.ThreadID}, field{"user id", in.UserID}, field{"message id", in.MessageID})
}

// field is a named platform id to check.
type field struct{ name, v string }

// checkIDs checks that platform ids are storable (chat.CheckID).
func checkIDs(fields ...field) error {
	for _, f := range fields {
		if err := chat.CheckID(f.name, f.v); err != nil {
			return err
		}
	}
	return nil
}

// receiveOne commits one update in a transaction of its own. The first
// try assumes the update is new and lets the unique indexes find out
// otherwise (a redelivery then rolls back and is logged as a duplicate by
// the next try): new updates are the common case, and this spares each
// one a lookup.
func (g *Gateway) receiveOne(ctx context.Context, in gh.Inbound) (chat.ReceiveResult, error) {
	var res chat.ReceiveResult
	var err error
	for try := range 3 {
		err = g.st.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
			var terr error
			res, terr = g.receiveTx(ctx, tx, in, try > 0, nil)
			return terr
		})
		if !raced(err) {
			break
		}
	}
	return res, err
}

func raced(err error) bool { return errors.Is(err, errRaced) || gh.IsCode(err, gh.CodeConflict) }

// receiveTx records one update inside tx. batch counts the updates this
// transaction has already handed on per chat (their receive rows are
// written at commit, so the flood count cannot see them); nil outside a
// batch.
func (g *Gateway) receiveTx(ctx context.Context, tx store.Tx, in gh.Inbound, lookFirst bool, batch map[string]int) (chat.ReceiveResult, error) {
	now := g.cfg.Now().UTC()
	text := cleanText(in.Text)
	entry := receiveEntry(in, text, now)
	var res chat.ReceiveResult
	err := func() error {
		if lookFirst {
			if first, ok, err := tx.ReceiveByUpdate(ctx, in.Platform, in.UpdateID); err != nil {
				return err
			} else if ok {
				return g.drop(ctx, tx, &res, entry, chat.ReasonDuplicate, "first received as #"+itoa(first.ID), first.SessionID, first.Seq)
			}
		}
		// Someone let in by pairing is looked up here, in the receive's
		// transaction: a revocation holds for the next message.
		admitted := g.Allowed(in.Platform, in.UserID)
		if !admitted && in.UserID != "" && !in.IsBot {
			var err error
			if admitted, err = g.admits(ctx, tx, in.Platform, in.UserID); err != nil {
				return err
			}
		}
		reason, detail := g.dropReason(in, text, admitted)
		if reason == chat.ReasonNotAllowed && g.pairable(in, text) {
			return g.pair(ctx, tx, &res, entry, in, now)
		}
		if reason == chat.ReasonUnsupported && g.hintable(in, admitted) {
			return g.hintLibrary(ctx, tx, &res, entry, in)
		}
		if reason != "" {
			return g.drop(ctx, tx, &res, entry, reason, detail, "", 0)
		}
		session := chat.SessionFor(in.Platform, in.ChatID, in.ThreadID)
		addr := store.AddressEntry{SessionID: session, UserID: in.UserID, Updated: now,
			Address: gh.Address{Platform: in.Platform, ChatID: in.ChatID, ThreadID: in.ThreadID, ChatType: in.ChatType, ReplyTo: in.MessageID}}
		// The address row is locked until commit: one chat's receives go
		// one at a time, so the flood count is exact. Flood is counted
		// per chat, across its threads (a Slack channel whose every
		// message starts a thread is still one chat).
		since := now.Add(-time.Minute)
		_, known, n, err := tx.TouchChat(ctx, addr, since)
		if err != nil {
			return err
		}
		if !known {
			_, created, err := tx.UpsertAddress(ctx, addr)
			if err != nil {
				return err
			}
			// The session exists whenever its address does, drop or not.
			if created {
				if _, _, err := tx.CreateSession(ctx, gh.Session{ID: session, Tenant: gh.DefaultTenant, Title: in.Platform + " chat", Created: now}); err != nil {
					return err
				}
			}
			if n, err = tx.CountHandedOn(ctx, in.Platform, in.ChatID, since); err != nil {
				return err
			}
		}
		n += batch[chatKey(in)]
		if n >= g.cfg.FloodLimit {
			return g.drop(ctx, tx, &res, entry, chat.ReasonFlood, "more than "+itoa(int64(g.cfg.FloodLimit))+" messages in a minute", session, 0)
		}

		msg := gh.UserMessage{Text: clip(text, maxInboundText), Delivery: g.cfg.MidTurn, Source: in.Platform, User: people.PseudonymousUserID(in.Platform, in.UserID)}
		if msg.Delivery == gh.DeliveryGuide {
			// A guide joins a live turn; with none it waits like any
			// queued input, and the committed event says so.
			if run, ok, err := tx.LatestRun(ctx, session); err != nil {
				return err
			} else if !ok || run.State != gh.RunRunning {
				msg.Delivery, msg.RequestedDelivery = gh.DeliveryQueue, gh.DeliveryGuide
			}
		}
		payload, err := json.Marshal(msg)
		if err != nil {
			return gh.Wrap(gh.CodeInternal, err, "encode user message")
		}
		c, err := g.k.EdgeCommitTx(ctx, tx, kernel.EdgeInput{SessionID: session,
			Event: gh.NewEvent{Kind: gh.KindUserMessage, Payload: payload, Key: "in:" + in.Platform + ":" + in.UpdateID}})
		// A committed event with this update's key (or the same key and
		// another delivery, queue then and guide now) is a redelivery.
		// On a first try that may be a race: roll back and look. On a
		// later try the receive row is gone (pruned) but the event is
		// not: log the duplicate here rather than fail forever.
		if c.Duplicate || gh.IsCode(err, gh.CodeIdempotencyConflict) {
			if !lookFirst {
				return errRaced
			}
			return g.drop(ctx, tx, &res, entry, chat.ReasonDuplicate, "its message is already in the log", session, c.Event.Seq)
		}
		if err != nil {
			return err
		}
		entry.Outcome, entry.SessionID, entry.Seq = chat.ReceiveHandedOn, session, c.Event.Seq
		// Written with the commit: a racing first receive of the same
		// update fails it with CodeConflict, and the next try logs this
		// one as a duplicate.
		res = chat.ReceiveResult{Outcome: chat.ReceiveHandedOn, SessionID: session, Seq: c.Event.Seq}
		if batch != nil {
			batch[chatKey(in)]++
		}
		return tx.InsertReceiveAtCommit(ctx, entry)
	}()
	return res, err
}

// cleanText is received text as the log can store it: no NUL, valid
// UTF-8.
func cleanText(s string) string {
	return strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", ""), "\uFFFD")
}

// receiveEntry is the receive-log row of update in, with text (cleaned)
// as its preview; the caller sets what became of it.
func receiveEntry(in gh.Inbound, text string, now time.Time) store.ReceiveEntry {
	return store.ReceiveEntry{
		Platform: in.Platform, UpdateID: in.UpdateID, ChatID: in.ChatID, ThreadID: in.ThreadID, UserID: in.UserID,
		UserName: clip(in.UserName, maxFieldLen), MessageID: in.MessageID, IsBot: in.IsBot, Text: clip(text, previewLen), ReceivedAt: now,
	}
}

func chatKey(in gh.Inbound) string { return in.Platform + "\x00" + in.ChatID }

// drop records entry as dropped for reason. A concurrent first receive of
// the same update makes it a duplicate instead.
func (g *Gateway) drop(ctx context.Context, tx store.Tx, res *chat.ReceiveResult, e store.ReceiveEntry, reason, detail, session string, seq int64) error {
	_, err := g.dropRow(ctx, tx, res, e, reason, detail, session, seq)
	return err
}

// dropRow is drop, returning the row written.
func (g *Gateway) dropRow(ctx context.Context, tx store.Tx, res *chat.ReceiveResult, e store.ReceiveEntry, reason, detail, session string, seq int64) (store.ReceiveEntry, error) {
	e.Outcome, e.Reason, e.Detail, e.SessionID, e.Seq = chat.ReceiveDropped, reason, detail, session, seq
	row, inserted, err := tx.InsertReceive(ctx, e)
	if err != nil {
		return row, err
	}
	if !inserted {
		return row, errRaced
	}
	*res = chat.ReceiveResult{Outcome: chat.ReceiveDropped, Reason: reason, SessionID: session, Seq: seq}
	return row, nil
}

// dropReason decides the drops that need no more of the database: a bot,
// a stranger (admitted says whether the sender is allowed or let in),
// nothing we handle, nothing at all.
func (g *Gateway) dropReason(in gh.Inbound, text string, admitted bool) (reason, detail string) {
	switch {
	case strings.HasPrefix(in.Unsupported, "malformed: "):
		return chat.ReasonUnsupported, clip(in.Unsupported, maxFieldLen)
	case in.IsBot:
		return chat.ReasonFromBot, ""
	case !admitted:
		how := " (or turn GATEHOUSE_PAIRING on)"
		if g.cfg.Pairing {
			how = " (pairing codes are given in a direct chat, for a text message)"
		}
		if len(g.allowed[in.Platform]) == 0 {
			return chat.ReasonNotAllowed, "nobody is allowed on " + in.Platform + " yet: set " + strings.ToUpper(in.Platform) + "_ALLOWED_USERS" + how
		}
		return chat.ReasonNotAllowed, "user " + in.UserID + " is not on " + strings.ToUpper(in.Platform) + "_ALLOWED_USERS" + how
	case in.Unsupported != "":
		return chat.ReasonUnsupported, clip(in.Unsupported, maxFieldLen)
	case strings.TrimSpace(text) == "":
		return chat.ReasonEmpty, ""
	}
	return "", ""
}

func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n])
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
