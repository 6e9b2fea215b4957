package gateway

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/store"
)

// Pairing lets people in without a restart. With Config.Pairing on, a
// stranger (not on the platform's allow-list, not let in before) who writes
// in a direct chat gets a one-time code as a reply, and their message is
// not handed on. An admin approves the code (People.Approve: /admin, the
// API, `gatehouse pair approve`), and from the next message on the person
// is allowed, until revoked. Who is let in lives in the database, read in
// each receive's transaction: a revocation holds for the next message on
// every replica.
//
// The code leaves through the outbox like every reply: its row commits in
// the receive's transaction, keyed by the session and minus the receive
// row's id (no event of the log stands behind it), and the dispatcher
// sends it at most once.

const (
	// PairingCodeTTL is how long a pairing code can be approved. A
	// stranger who writes after it passed gets a new code.
	PairingCodeTTL = time.Hour
	// PairingCodesPerHour is how many codes one sender is given in an
	// hour; a sender over it is dropped without a reply (the receive log
	// says why). One code is live per sender at a time in any case.
	PairingCodesPerHour = 3
	// pairingAlphabet has no 0/O, 1/I/L: a code read out loud or typed
	// from a phone comes out right.
	pairingAlphabet = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
	pairingCodeLen  = 8
)

// newPairingCode draws a code: 8 characters of 31, about 40 bits. Bytes
// at or above the largest multiple of 31 are drawn again, so every
// character is equally likely.
func newPairingCode() string {
	const limit = 256 / len(pairingAlphabet) * len(pairingAlphabet)
	out := make([]byte, 0, pairingCodeLen)
	var b [16]byte
	for len(out) < pairingCodeLen {
		_, _ = rand.Read(b[:])
		for _, c := range b {
			if int(c) < limit && len(out) < pairingCodeLen {
				out = append(out, pairingAlphabet[int(c)%len(pairingAlphabet)])
			}
		}
	}
	return string(out)
}

// registered reports whether platform is a registered chat platform.
func registered(platform string) bool {
	registryMu.RLock()
	defer registryMu.RUnlock()
	_, ok := prefixes[platform]
	return ok
}

func registeredNames() []string {
	registryMu.RLock()
	defer registryMu.RUnlock()
	out := make([]string, 0, len(prefixes))
	for name := range prefixes {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}

// NormalizeCode is a code as typed (any case, with spaces or dashes) as
// it is stored.
func NormalizeCode(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == ' ' || r == '-' || r == '\t':
			return -1
		case r >= 'a' && r <= 'z':
			return r - 'a' + 'A'
		}
		return r
	}, s)
}

func validCode(code string) bool {
	if len(code) != pairingCodeLen {
		return false
	}
	for _, r := range code {
		if !strings.ContainsRune(pairingAlphabet, r) {
			return false
		}
	}
	return true
}

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
// (once per live code, at most PairingCodesPerHour an hour), and the
// message dropped with reason pairing either way.
func (g *Gateway) pair(ctx context.Context, tx store.Tx, res *ReceiveResult, e store.ReceiveEntry, in gh.Inbound, now time.Time) error {
	if live, ok, err := tx.LivePairingCode(ctx, in.Platform, in.UserID, now); err != nil {
		return err
	} else if ok {
		return g.drop(ctx, tx, res, e, ReasonPairing, "code "+live.Code+" (sent "+clock(live.Created)+") is still pending; not sent again", "", 0)
	}
	n, err := tx.CountPairingCodes(ctx, in.Platform, in.UserID, now.Add(-time.Hour))
	if err != nil {
		return err
	}
	if n >= PairingCodesPerHour {
		return g.drop(ctx, tx, res, e, ReasonPairing, fmt.Sprintf("no code sent: this sender was given %d in the last hour (the limit)", n), "", 0)
	}
	// The reply needs the chat's address, and the session its outbox row
	// belongs to: the same ones the person's messages use once let in.
	session := SessionFor(in.Platform, in.ChatID, in.ThreadID)
	addr := store.AddressEntry{SessionID: session, UserID: in.UserID, Updated: now,
		Address: gh.Address{Platform: in.Platform, ChatID: in.ChatID, ThreadID: in.ThreadID, ChatType: in.ChatType, ReplyTo: in.MessageID}}
	if _, created, err := tx.UpsertAddress(ctx, addr); err != nil {
		return err
	} else if created {
		if _, _, err := tx.CreateSession(ctx, gh.Session{ID: session, Tenant: gh.DefaultTenant, Title: in.Platform + " chat", Created: now}); err != nil {
			return err
		}
	}
	c := store.PairingCode{Code: newPairingCode(), Platform: in.Platform, UserID: in.UserID, UserName: e.UserName, ChatID: in.ChatID,
		Text: e.Text, Created: now, ExpiresAt: now.Add(PairingCodeTTL)}
	if ok, err := tx.InsertPairingCode(ctx, c); err != nil {
		return err // a code drawn twice is a conflict: the receive is tried again
	} else if !ok {
		return errRaced // another receive gave this sender a code meanwhile
	}
	row, err := g.dropRow(ctx, tx, res, e, ReasonPairing, "code "+c.Code+" sent, valid until "+clock(c.ExpiresAt)+
		": approve it under People in /admin or with gatehouse pair approve "+c.Code, session, 0)
	if err != nil {
		return err
	}
	payload, err := json.Marshal(textPayload{Text: pairingReply(c.Code)})
	if err != nil {
		return gh.Wrap(gh.CodeInternal, err, "encode pairing reply")
	}
	_, err = tx.EnqueueOutbox(ctx, store.OutboxEntry{SessionID: session, Seq: -row.ID, Platform: in.Platform, Kind: store.OutboxMessage,
		Payload: payload, AvailableAt: now, Created: now})
	return err
}

// pairingReply is what a stranger is sent.
func pairingReply(code string) string {
	return "🔐 You are not on this assistant's list yet. To be let in, give this code to its admin: " + code +
		" (valid for " + ttlWords(PairingCodeTTL) + "). Once they approve it, write again. Until then your messages are not passed on."
}

func ttlWords(d time.Duration) string {
	switch {
	case d == time.Hour:
		return "an hour"
	case d%time.Hour == 0:
		return fmt.Sprintf("%d hours", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%d minutes", d/time.Minute)
	}
	return d.String()
}

func clock(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") }

// People is who was let in without a restart: the pending pairing codes,
// the people approved, approving and revoking. It needs only the store,
// so the API serves it without a chat platform and `gatehouse pair`
// without a running gateway.
type People struct {
	st  store.Store
	now func() time.Time
}

// NewPeople serves pairing over st; now defaults to time.Now.
func NewPeople(st store.Store, now func() time.Time) *People {
	if now == nil {
		now = time.Now
	}
	return &People{st: st, now: now}
}

// PeopleList is GET /v1/people.
type PeopleList struct {
	// Pending are the codes that can still be approved, newest first.
	Pending []store.PairingCode `json:"pending"`
	// People are those let in, most recently first.
	People []store.Person `json:"people"`
}

// List returns the pending codes and the people let in.
func (p *People) List(ctx context.Context) (PeopleList, error) {
	pending, err := p.st.PendingPairingCodes(ctx, p.now().UTC(), 200)
	if err != nil {
		return PeopleList{}, err
	}
	people, err := p.st.ListPeople(ctx, 1000)
	if err != nil {
		return PeopleList{}, err
	}
	if pending == nil {
		pending = []store.PairingCode{}
	}
	if people == nil {
		people = []store.Person{}
	}
	return PeopleList{Pending: pending, People: people}, nil
}

// Approve lets in the sender of a pending code; by says who approved it
// and where. An unknown code is CodeUnknownPairingCode, one past its
// expiry CodePairingCodeExpired, one approved already CodeConflict.
func (p *People) Approve(ctx context.Context, code, by string) (store.Person, error) {
	code = NormalizeCode(code)
	if !validCode(code) {
		return store.Person{}, gh.Errorf(gh.CodeUnknownPairingCode, "%q is not a pairing code: codes are %d letters and digits", code, pairingCodeLen)
	}
	var out store.Person
	err := p.st.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		now := p.now().UTC()
		c, err := tx.GetPairingCode(ctx, code)
		if gh.IsCode(err, gh.CodeNotFound) {
			return gh.Errorf(gh.CodeUnknownPairingCode, "no pairing code %s was given", code)
		}
		if err != nil {
			return err
		}
		switch {
		case c.State == store.PairingApproved:
			return gh.Errorf(gh.CodeConflict, "pairing code %s was approved already (%s user %s)", code, c.Platform, c.UserID)
		case c.State == store.PairingExpired || !now.Before(c.ExpiresAt):
			return gh.Errorf(gh.CodePairingCodeExpired, "pairing code %s expired at %s: the person gets a new one when they write again", code, clock(c.ExpiresAt))
		}
		ok, err := tx.ClosePairingCode(ctx, code, store.PairingApproved, now)
		if err != nil {
			return err
		}
		if !ok {
			return gh.Errorf(gh.CodeConflict, "pairing code %s was approved meanwhile", code)
		}
		out, _, err = tx.PutPerson(ctx, store.Person{Platform: c.Platform, UserID: c.UserID, UserName: c.UserName, Code: c.Code,
			ApprovedBy: by, Approved: now})
		return err
	})
	return out, err
}

// Allow lets a user in directly, without a code; created is false when
// they were in already (they stay as first let in).
func (p *People) Allow(ctx context.Context, platform, userID, by string) (store.Person, bool, error) {
	platform, userID = strings.TrimSpace(platform), strings.TrimSpace(userID)
	if !registered(platform) {
		return store.Person{}, false, gh.Errorf(gh.CodeInvalid, "platform must be one of %s, not %q", strings.Join(registeredNames(), ", "), platform)
	}
	if userID == "" {
		return store.Person{}, false, gh.Errorf(gh.CodeInvalid, "user must be the platform's user id")
	}
	if err := checkIDs(field{"user id", userID}); err != nil {
		return store.Person{}, false, err
	}
	return p.st.PutPerson(ctx, store.Person{Platform: platform, UserID: userID, ApprovedBy: by, Approved: p.now().UTC()})
}

// Revoke lets a person out: from their next message on, on every replica,
// they are a stranger again. Someone not let in is CodeNotFound (the
// environment's allow-lists are changed there, not here).
func (p *People) Revoke(ctx context.Context, platform, userID string) error {
	ok, err := p.st.DeletePerson(ctx, platform, userID)
	if err != nil {
		return err
	}
	if !ok {
		return gh.Errorf(gh.CodeNotFound, "%s user %s was not let in (an allow-list in the environment is changed there)", platform, userID)
	}
	return nil
}
