package memory

import (
	"context"
	"log/slog"
	"net/http"
	"net/mail"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/store"
)

// Fact is one thing remembered about a user. It is the store's row type,
// so the store can keep the supersession rule in the same statement that
// writes it.
type Fact = store.MemoryFact

// Kinds of fact.
const (
	KindContact    = "contact"
	KindPreference = "preference"
	KindName       = "name"
	KindNote       = "note"
)

// Subject keys: the user's name, and the prefixes of the other kinds
// ("contact:sara", "pref:language", "note:car golf").
const (
	SubjectName   = "name"
	ContactPrefix = "contact:"
	PrefPrefix    = "pref:"
	NotePrefix    = "note:"
)

// Turn is what one person said in one closed turn, as memory is told
// about it: only their own words. The assistant's answer and tool results
// are not part of it, so no pass can take a fact from them; in a turn that
// answered several people, each person's part is a Turn of its own,
// remembered under that person's key.
type Turn struct {
	SessionID string
	// Seq is the person's latest message of the turn: the source of what
	// is learnt from it.
	Seq int64
	// At is when the turn happened; what is learnt from it is observed
	// then, however late a pass runs. Defaults to now.
	At time.Time
	// UserText is what the person said in the turn.
	UserText string
}

// Config configures memory. The zero value is usable.
type Config struct {
	// Floor is the evidence a fact needs to be recalled: closeness (how
	// much closer in meaning to the question than the background, 0–1)
	// plus coverage (the share of the question's content words it holds,
	// 0–1). Defaults to 0.6: a fact holding half the question's words
	// needs some closeness beyond that, one holding none needs strong
	// closeness. A negative Floor lets every scored fact through.
	Floor float64
	// RecallLimit is how many facts Recall returns when asked for 0.
	// Defaults to 5.
	RecallLimit int
	// EmbeddingsURL is the base URL of an OpenAI-compatible API with a
	// /embeddings endpoint (e.g. https://api.openai.com/v1 or
	// http://localhost:11434/v1); a URL ending in /embeddings is accepted
	// too. Defaults to empty: recall is lexical.
	EmbeddingsURL string
	// EmbeddingsAPIKey is sent as a bearer token. Defaults to none.
	EmbeddingsAPIKey string
	// EmbeddingsModel names the model. Defaults to "text-embedding-3-small".
	EmbeddingsModel string
	// EmbeddingsTimeout bounds one embeddings request. Defaults to 10s.
	// When the endpoint fails, Recall falls back to lexical scoring.
	EmbeddingsTimeout time.Duration
	// HTTPClient makes the embeddings requests. Defaults to
	// http.DefaultClient.
	HTTPClient *http.Client
	// NoModelPass stops Remember from queueing a model-pass job. Defaults
	// to false: every turn with user text gets one.
	NoModelPass bool
	// Batch is how many of one person's turns in one session the model
	// pass waits for, to read them in one model call; a call reads at most
	// Batch turns. Defaults to 5; at most MaxBatch. 1 reads every turn on
	// its own.
	Batch int
	// BatchIdle is how long a session may stay quiet before the model
	// pass reads a person's fewer than Batch turns anyway: the time since
	// the newest was queued. Defaults to 2m.
	BatchIdle time.Duration
	// JobAttempts is how many attempts a model-pass job gets before it
	// fails for good (an answer that is not the expected JSON ends it at
	// once, ErrBadAnswer). Defaults to 3.
	JobAttempts int
	// JobBackoff is the wait before a failed attempt's retry, multiplied by
	// the attempt number. Defaults to 30s.
	JobBackoff time.Duration
	// JobLease bounds one attempt of a batch: the extract call's context
	// ends then, and jobs whose worker died are claimable again. Defaults
	// to 5m.
	JobLease time.Duration
	// JobPoll is how often Work looks for due jobs. Defaults to 5s.
	JobPoll time.Duration
	// Now is the clock. Defaults to time.Now.
	Now func() time.Time
	// Logger receives warnings (an embeddings endpoint that failed, a job
	// that failed). Defaults to slog.Default().
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.Floor == 0 {
		c.Floor = 0.6
	}
	if c.RecallLimit <= 0 {
		c.RecallLimit = 5
	}
	if c.EmbeddingsModel == "" {
		c.EmbeddingsModel = "text-embedding-3-small"
	}
	if c.EmbeddingsTimeout <= 0 {
		c.EmbeddingsTimeout = 10 * time.Second
	}
	if c.HTTPClient == nil {
		c.HTTPClient = http.DefaultClient
	}
	if c.Batch <= 0 {
		c.Batch = 5
	}
	c.Batch = min(c.Batch, MaxBatch)
	if c.BatchIdle <= 0 {
		c.BatchIdle = 2 * time.Minute
	}
	if c.JobAttempts <= 0 {
		c.JobAttempts = 3
	}
	if c.JobBackoff <= 0 {
		c.JobBackoff = 30 * time.Second
	}
	if c.JobLease <= 0 {
		c.JobLease = 5 * time.Minute
	}
	if c.JobPoll <= 0 {
		c.JobPoll = 5 * time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// Memory keeps facts about users in the store.
type Memory struct {
	st  store.Store
	cfg Config
	emb *embedder
}

// New returns memory over st.
func New(st store.Store, cfg Config) *Memory {
	m := &Memory{st: st, cfg: cfg.withDefaults()}
	if m.cfg.EmbeddingsURL != "" {
		m.emb = newEmbedder(m.cfg)
	}
	return m
}

// Config returns the effective configuration.
func (m *Memory) Config() Config { return m.cfg }

func (m *Memory) now() time.Time { return m.cfg.Now().UTC().Truncate(time.Microsecond) }

// maxTurnText bounds each text of a turn kept for the model pass.
const maxTurnText = 64 << 10

// maxFactText bounds a fact's text and value.
const maxFactText = 2000

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for s != "" && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

func checkUser(userKey string) error {
	if strings.TrimSpace(userKey) == "" || len(userKey) > 300 {
		return gh.Errorf(gh.CodeInvalid, "memory needs a user key of 1–300 characters")
	}
	return nil
}

// Remember is called when a turn closes, once for each person whose words
// it holds, with that person's key and words. It writes the rule pass's
// facts and queues the model pass over the turn (a job, run in a batch
// with the person's other turns of the session: RunJobs), in one
// transaction: either both are kept or neither. It returns the facts the rule pass wrote (a fact older than
// what is kept about its subject is not written). Remembering the same
// turn (session and seq) again queues no second job.
func (m *Memory) Remember(ctx context.Context, userKey string, turn Turn) ([]Fact, error) {
	var stored []Fact
	err := m.st.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		var err error
		stored, err = m.RememberTx(ctx, tx, userKey, turn)
		return err
	})
	if err != nil {
		return nil, err
	}
	return stored, nil
}

// RememberTx is Remember inside the caller's transaction: the turn's
// settle commits what it remembers (and the queued model pass) with it.
func (m *Memory) RememberTx(ctx context.Context, tx store.Tx, userKey string, turn Turn) ([]Fact, error) {
	if err := checkUser(userKey); err != nil {
		return nil, err
	}
	now := m.now()
	if turn.At.IsZero() {
		turn.At = now
	}
	turn.At = turn.At.UTC().Truncate(time.Microsecond)
	var stored []Fact
	for _, f := range Rules(turn) {
		f.UserKey, f.Created = userKey, now
		got, ok, err := tx.PutMemoryFact(ctx, f, indexTerms(f))
		if err != nil {
			return nil, err
		}
		if ok {
			// A later statement of the turn about the same subject
			// replaced an earlier one.
			stored = slices.DeleteFunc(stored, func(s Fact) bool { return s.ID == got.ID })
			stored = append(stored, got)
		}
	}
	if m.cfg.NoModelPass || strings.TrimSpace(turn.UserText) == "" {
		return stored, nil
	}
	if _, _, err := tx.InsertMemoryJob(ctx, store.MemoryJob{
		UserKey: userKey, SessionID: turn.SessionID, Seq: turn.Seq, At: turn.At, UserText: clip(turn.UserText, maxTurnText),
		State: store.MemoryJobQueued, MaxAttempts: m.cfg.JobAttempts, AvailableAt: now, Created: now, Updated: now,
	}); err != nil {
		return nil, err
	}
	return stored, nil
}

// Add remembers one fact as told (the remember tool, an import): its
// subject is derived from its kind and text when empty, and ObservedAt
// defaults to now. It returns the stored fact of the subject and whether f
// was written (false when what is kept about the subject is newer).
func (m *Memory) Add(ctx context.Context, userKey string, f Fact) (Fact, bool, error) {
	if err := checkUser(userKey); err != nil {
		return Fact{}, false, err
	}
	if f.ObservedAt.IsZero() {
		f.ObservedAt = m.now()
	}
	f, ok := normalize(userKey, f)
	if !ok {
		return Fact{}, false, gh.Errorf(gh.CodeInvalid, "a fact needs a text with some content words")
	}
	f.Created = m.now()
	return m.st.PutMemoryFact(ctx, f, indexTerms(f))
}

// normalize checks and completes a fact from outside the rule pass (the
// model pass, Add): a known kind (else a note), a normalised subject with
// its kind's prefix (derived from the text when empty), clipped text.
func normalize(userKey string, f Fact) (Fact, bool) {
	f.UserKey, f.ID, f.Deleted, f.DeletedAt = userKey, 0, false, time.Time{}
	f.Text = clip(strings.TrimSpace(f.Text), maxFactText)
	f.Value = clip(strings.TrimSpace(f.Value), maxFactText)
	f.ObservedAt = f.ObservedAt.UTC().Truncate(time.Microsecond)
	if f.Text == "" {
		return f, false
	}
	f.Kind = strings.ToLower(strings.TrimSpace(f.Kind))
	subject := normalizeSubject(f.Subject)
	switch {
	case strings.HasPrefix(subject, ContactPrefix):
		f.Kind = KindContact
	case strings.HasPrefix(subject, PrefPrefix):
		f.Kind = KindPreference
	case subject == SubjectName:
		f.Kind = KindName
	}
	switch f.Kind {
	case KindName:
		subject = SubjectName
	case KindContact:
		if subject == "" {
			return f, false // a contact without a name cannot be looked up
		}
		if !strings.HasPrefix(subject, ContactPrefix) {
			subject = ContactPrefix + subject
		}
	case KindPreference:
		if subject == "" {
			subject = topicKey(f.Text, prefVerbs, 4)
		}
		if !strings.HasPrefix(subject, PrefPrefix) {
			subject = PrefPrefix + subject
		}
	default:
		f.Kind = KindNote
		if subject == "" {
			subject = topicKey(f.Text, nil, 8)
		}
		if !strings.HasPrefix(subject, NotePrefix) {
			subject = NotePrefix + subject
		}
	}
	if subject == "" || strings.HasSuffix(subject, ":") {
		return f, false
	}
	f.Subject = normalizeSubject(subject)
	return f, true
}

// List returns what is kept about a user: the live facts, most recently
// observed first.
func (m *Memory) List(ctx context.Context, userKey string) ([]Fact, error) {
	if err := checkUser(userKey); err != nil {
		return nil, err
	}
	return m.st.MemoryFacts(ctx, userKey, "", 0)
}

// Forget removes one of a user's facts (a soft delete: the row stays as a
// tombstone, so a late pass over an older turn cannot bring it back).
// A fact that is not a live fact of the user is a CodeNotFound error.
func (m *Memory) Forget(ctx context.Context, userKey string, factID int64) error {
	if err := checkUser(userKey); err != nil {
		return err
	}
	gone, err := m.st.ForgetMemoryFacts(ctx, userKey, []int64{factID}, m.now())
	if err != nil {
		return err
	}
	if len(gone) == 0 {
		return gh.Errorf(gh.CodeNotFound, "no memory %d", factID)
	}
	return nil
}

// ForgetMatching removes every live fact of the user that holds all the
// content words of text ("Sara's email", "that I like jazz"), and returns
// them. Text without content words is a CodeInvalid error.
func (m *Memory) ForgetMatching(ctx context.Context, userKey, text string) ([]Fact, error) {
	if err := checkUser(userKey); err != nil {
		return nil, err
	}
	terms, _ := contentTerms(text)
	if len(terms) == 0 {
		return nil, gh.Errorf(gh.CodeInvalid, "say what to forget")
	}
	// The facts holding the rarest term, and their other terms.
	stats, err := m.st.MemoryTermStats(ctx, userKey, terms)
	if err != nil {
		return nil, err
	}
	slices.SortFunc(terms, func(a, b string) int { return stats.DF[a] - stats.DF[b] })
	if stats.DF[terms[0]] == 0 {
		return nil, nil
	}
	postings, err := m.st.MemoryPostings(ctx, userKey, terms[:1], terms[1:])
	if err != nil {
		return nil, err
	}
	held := map[int64]int{}
	for _, p := range postings {
		held[p.FactID]++
	}
	var ids []int64
	for id, n := range held {
		if n == len(terms) {
			ids = append(ids, id)
		}
	}
	if len(ids) == 0 {
		return nil, nil
	}
	slices.Sort(ids)
	return m.st.ForgetMemoryFacts(ctx, userKey, ids, m.now())
}

// Contacts returns the user's remembered contacts, name → address, for the
// email_send commitment check. Names are as the user wrote them ("Sara");
// the user's own address is under "me". A store failure is logged and
// yields no contacts.
func (m *Memory) Contacts(ctx context.Context, userKey string) map[string]string {
	out := map[string]string{}
	if checkUser(userKey) != nil {
		return out
	}
	facts, err := m.st.MemoryFacts(ctx, userKey, ContactPrefix, 0)
	if err != nil {
		m.cfg.Logger.Warn("memory: read contacts", "user", userKey, "err", err)
		return out
	}
	// Oldest first, so the newest fact wins a name two subjects share.
	for _, f := range slices.Backward(facts) {
		addr, err := mail.ParseAddress(f.Value)
		if err != nil {
			continue
		}
		out[contactName(f)] = addr.Address
	}
	return out
}

// contactName is the contact's name as written in the fact's text, else
// the subject's key capitalised.
func contactName(f Fact) string {
	key := strings.TrimPrefix(f.Subject, ContactPrefix)
	if key == "me" {
		return key
	}
	if i := strings.Index(strings.ToLower(f.Text), key); i >= 0 && len(strings.ToLower(f.Text)) == len(f.Text) {
		return f.Text[i : i+len(key)]
	}
	return titleCase(key)
}
