package kernel

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/store"
)

// Config tunes the kernel.
type Config struct {
	// LeaseTTL is how long a claim lasts without renewal. Defaults to 30s;
	// workers renew at a third of it.
	LeaseTTL time.Duration
	// MaxAttempts is how many attempts a run gets before it fails for good.
	// Defaults to 3.
	MaxAttempts int
	// MaxPayloadBytes bounds one event's payload. Defaults to 1 MiB.
	MaxPayloadBytes int
	// RetryBackoff is the delay before a failed attempt's retry, multiplied
	// by the attempt number. Defaults to 1s.
	RetryBackoff time.Duration
	// LoadPageSize is how many events one read of a load fetches. Defaults
	// to 500.
	LoadPageSize int
	// SessionCache is how many sessions' tenants are kept in memory, so a
	// tenant check reads nothing (an LRU: memory stays bounded however many
	// sessions exist; about 100 bytes a session). Defaults to 10,000.
	SessionCache int
	// ViewFresh is how long an attempt trusts its view of the session's log
	// (View.Quiet) when nothing it can see committed: within it, a check
	// for new input costs no read. A commit of this process is seen at
	// once, one of another replica at the attempt's next commit or after
	// ViewFresh, whichever is first. Defaults to 1s.
	ViewFresh time.Duration
	// Now is the clock. Defaults to time.Now. Leases compare against it, so
	// replicas need synchronised clocks (NTP), as any lease system does.
	Now func() time.Time
	// Observer, when set, sees the events of each commit of this process
	// (observe.go). Defaults to none.
	Observer Observer
	// Logger receives what the kernel says once per attempt (a database
	// outage a fenced commit rides out). Defaults to slog.Default().
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.LeaseTTL <= 0 {
		c.LeaseTTL = 30 * time.Second
	}
	if c.MaxAttempts <= 0 {
		c.MaxAttempts = 3
	}
	if c.MaxPayloadBytes <= 0 {
		c.MaxPayloadBytes = 1 << 20
	}
	if c.RetryBackoff <= 0 {
		c.RetryBackoff = time.Second
	}
	if c.LoadPageSize <= 0 {
		c.LoadPageSize = 500
	}
	if c.SessionCache <= 0 {
		c.SessionCache = 10000
	}
	if c.ViewFresh <= 0 {
		c.ViewFresh = time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Kernel is the transactional core over one store.
type Kernel struct {
	st      store.Store
	cfg     Config
	feed    feed
	tenants *tenants

	// leases knows when each attempt's lease ends as last renewed here
	// (outage.go).
	leases leaseClock

	// gates closes a cancelled turn's gates (UseGateCloser).
	gmu   sync.RWMutex
	gates GateCloser
}

// New returns a kernel over st.
func New(st store.Store, cfg Config) *Kernel {
	cfg = cfg.withDefaults()
	k := &Kernel{st: st, cfg: cfg, tenants: newTenants(cfg.SessionCache)}
	if r, ok := st.(store.Relay); ok {
		// Other replicas' commits reach this one's subscribers as its own
		// do: with their events when they fit, else as a signal to read.
		r.OnRemote(func(sessionID string, events []gh.Event, complete bool) {
			if !complete {
				events = nil
			}
			k.feed.notify(sessionID, events)
		})
	}
	return k
}

// InTx runs fn in one transaction of the kernel's store, for composing a
// fenced commit (CommitTx) with other writes of the same transaction (a
// gate.opened event and its gate row). As with store.Store.InTx, fn may run
// again on a retryable conflict, so it must touch the database only through
// tx. InTx does not notify readers; call Notify after it succeeds.
func (k *Kernel) InTx(ctx context.Context, fn func(ctx context.Context, tx store.Tx) error) error {
	return k.inTx(ctx, fn)
}

// Config returns the effective configuration.
func (k *Kernel) Config() Config { return k.cfg }

func (k *Kernel) now() time.Time { return k.cfg.Now().UTC().Truncate(time.Microsecond) }

// Limits on identifiers.
const (
	maxIDLen  = 200
	maxKeyLen = 300
)

// validID enforces the rule of session ids and tenants (docs/api.md):
// 1–maxIDLen characters of valid UTF-8 with no slash, no control
// character (C0, DEL, C1), no Unicode format character (category Cf: bidi
// controls, zero-width characters, BOM), no other invisible character
// (Default_Ignorable_Code_Point: the combining grapheme joiner, Hangul
// fillers, variation selectors, …), no line or paragraph separator
// (Zl, Zp) and no space of any kind (Zs). Ids end up in URLs, logs,
// admin pages and chat cards; a bidi override or an invisible character
// there makes one id look like another, and a line separator forges log
// lines.
func validID(what, id string) error {
	fail := func(why string) error {
		return gh.Errorf(gh.CodeInvalid, "%s must be 1–%d characters with no spaces, slashes, control characters, "+
			"invisible or Unicode format characters (bidi controls, zero-width characters) or line separators; %s", what, maxIDLen, why)
	}
	if id == "" {
		return fail("it is empty")
	}
	if !utf8.ValidString(id) {
		return fail("it is not valid UTF-8")
	}
	n := 0
	for _, r := range id {
		n++
		if n > maxIDLen {
			return fail(fmt.Sprintf("it is longer than %d characters", maxIDLen))
		}
		if kind := forbiddenInID(r); kind != "" {
			// The character is named by its code point: printed as it is,
			// a bidi control would garble the message itself.
			return fail(fmt.Sprintf("character %d is %s (U+%04X)", n, kind, r))
		}
	}
	return nil
}

// forbiddenInID names what r is when an id may not hold it, else "".
func forbiddenInID(r rune) string {
	switch {
	case r == '/':
		return "a slash"
	case unicode.Is(unicode.Cc, r):
		return "a control character"
	case unicode.Is(unicode.Zs, r):
		return "a space"
	case unicode.Is(unicode.Zl, r), unicode.Is(unicode.Zp, r):
		return "a line or paragraph separator"
	case unicode.Is(unicode.Cf, r):
		return "an invisible format character"
	case unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r), unicode.Is(unicode.Variation_Selector, r):
		// The rest of Unicode's Default_Ignorable_Code_Point (Cf is
		// above): characters shown as nothing, such as U+034F COMBINING
		// GRAPHEME JOINER, the Hangul fillers U+115F, U+1160, U+3164 and
		// U+FFA0, and the variation selectors U+180B–U+180F,
		// U+FE00–U+FE0F and U+E0100–U+E01EF.
		return "an invisible character"
	}
	return ""
}

// CreateSession creates a session, or returns the existing one with that id
// (created=false). A session of another tenant with the same id is an
// unknown-session error for this tenant. A chat platform's session id is
// an external-session error (gh.CheckEdgeSession), as in EdgeCommit:
// only the chat makes its session (the gateway, in its own transaction),
// so an id cannot be taken before its chat first speaks.
func (k *Kernel) CreateSession(ctx context.Context, s gh.Session) (gh.Session, bool, error) {
	if s.Tenant == "" {
		s.Tenant = gh.DefaultTenant
	}
	if err := validID("session id", s.ID); err != nil {
		return gh.Session{}, false, err
	}
	if err := gh.CheckEdgeSession(s.ID); err != nil {
		return gh.Session{}, false, err
	}
	if err := validID("tenant", s.Tenant); err != nil {
		return gh.Session{}, false, err
	}
	s.Created = k.now()
	got, created, err := k.st.CreateSession(ctx, s)
	if err != nil {
		return gh.Session{}, false, err
	}
	k.tenants.put(got.ID, got.Tenant)
	if got.Tenant != s.Tenant {
		return gh.Session{}, false, gh.Errorf(gh.CodeUnknownSession, "unknown session %q", s.ID)
	}
	return got, created, nil
}

// Session returns a session.
func (k *Kernel) Session(ctx context.Context, id string) (gh.Session, error) {
	s, err := k.st.GetSession(ctx, id)
	if err == nil {
		k.tenants.put(s.ID, s.Tenant)
	}
	return s, err
}

// Sessions lists a tenant's sessions, most recently active first.
func (k *Kernel) Sessions(ctx context.Context, tenant string, limit int) ([]gh.Session, error) {
	if tenant == "" {
		tenant = gh.DefaultTenant
	}
	if limit <= 0 || limit > 1000 {
		limit = 100
	}
	return k.st.ListSessions(ctx, tenant, limit)
}

// validateEvent checks kind, class, key and payload. It returns the
// payload compacted (so equal payloads compare equal byte for byte where
// the backend keeps text).
func (k *Kernel) validateEvent(e gh.NewEvent, edge bool) (gh.KindClass, json.RawMessage, error) {
	class, ok := gh.ClassOf(e.Kind)
	if !ok {
		return class, nil, gh.Errorf(gh.CodeUnknownKind, "unknown event kind %q", e.Kind)
	}
	if class.Edge != edge {
		if edge {
			return class, nil, gh.Errorf(gh.CodeUnknownKind, "kind %q needs a lease: it cannot be committed from the edge", e.Kind)
		}
		return class, nil, gh.Errorf(gh.CodeUnknownKind, "kind %q is edge input: it cannot be committed under a lease", e.Kind)
	}
	if len(e.Key) > maxKeyLen || !utf8.ValidString(e.Key) || strings.ContainsRune(e.Key, 0) {
		return class, nil, gh.Errorf(gh.CodeInvalid, "idempotency key must be at most %d characters of valid text", maxKeyLen)
	}
	if len(e.Payload) > k.cfg.MaxPayloadBytes {
		return class, nil, gh.Errorf(gh.CodePayloadTooLarge, "payload is %d bytes; the limit is %d", len(e.Payload), k.cfg.MaxPayloadBytes)
	}
	trimmed := bytes.TrimSpace(e.Payload)
	if len(trimmed) == 0 || trimmed[0] != '{' || !json.Valid(trimmed) {
		return class, nil, gh.Errorf(gh.CodeInvalidPayload, "payload must be a JSON object")
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, trimmed); err != nil {
		return class, nil, gh.Wrap(gh.CodeInvalidPayload, err, "payload must be a JSON object")
	}
	// A NUL character cannot be stored in Postgres text or jsonb; refuse it
	// the same way on every backend.
	if bytes.Contains(buf.Bytes(), []byte(`\u0000`)) {
		return class, nil, gh.Errorf(gh.CodeInvalidPayload, "payload must not contain NUL characters")
	}
	return class, buf.Bytes(), nil
}

// samePayload compares two JSON documents by meaning: Postgres keeps jsonb
// normalised (key order, spacing), so bytes are not comparable.
func samePayload(a, b json.RawMessage) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}

func checkRepeat(res store.AppendResult, payload json.RawMessage, kind gh.Kind) error {
	if !res.Existing {
		return nil
	}
	if res.Event.Kind != kind || !samePayload(res.Event.Payload, payload) {
		return gh.Errorf(gh.CodeIdempotencyConflict, "idempotency key %q was already used for another %s at seq %d", res.Event.Key, res.Event.Kind, res.Event.Seq)
	}
	return nil
}
