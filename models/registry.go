package models

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	gh "github.com/gatehouse/gatehouse"
)

// Target is one element of a fallback chain: a provider and a model name
// that is only ever sent to that provider.
type Target struct {
	Provider string
	Model    string
}

func (t Target) String() string { return t.Provider + ":" + t.Model }

// Chain is an ordered fallback chain.
type Chain []Target

func (c Chain) String() string {
	parts := make([]string, len(c))
	for i, t := range c {
		parts[i] = t.String()
	}
	return strings.Join(parts, ",")
}

// ParseSelection parses "provider:model[,provider:model…]" into a Chain.
// The provider is everything before the first colon (so "openai:llama3.2:3b"
// is model "llama3.2:3b" of openai). An empty selection gives a nil Chain
// and no error. It checks syntax only; Registry checks the providers.
func ParseSelection(s string) (Chain, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return nil, nil
	}
	var chain Chain
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		provider, model, ok := strings.Cut(part, ":")
		provider, model = strings.ToLower(strings.TrimSpace(provider)), strings.TrimSpace(model)
		if !ok || provider == "" || model == "" {
			return nil, newError(CodeNotConfigured, false, nil,
				"bad model selection %q: each entry must be provider:model, e.g. openai:gpt-4.1-mini", s)
		}
		chain = append(chain, Target{Provider: provider, Model: model})
	}
	return chain, nil
}

// Notice tells the user that a model of the chain failed and which one
// answered instead. The caller commits it so the user sees it.
type Notice struct {
	Text       string // "<provider:model> failed (<code>); answered by <provider:model>"
	Failed     Target
	Code       string
	AnsweredBy Target
}

// Registry holds the providers and runs calls with retries, fallback and the
// ledger. It is safe for concurrent use.
type Registry struct {
	cfg      Config
	selected Chain

	tour *tour // the scripted provider's, kept when another replaces it

	mu        sync.RWMutex
	providers map[string]Provider
}

// TourCall says whether a tool call's id claims to come from the built-in
// tour (scripted:tour) and whether this registry's tour made it, for this
// tool. Only the tour can make a genuine one: the id carries a MAC under a
// key drawn when the registry was built, which never leaves the process.
// A model's call ids are made by its provider, so no real model can pass
// for the tour; a tour call from before a restart claims without being
// genuine. An id claims when it holds "tour_" anywhere (the supervisor
// prefixes a provider's id to make it unique in the session); a real
// provider's id that happened to hold it would be refused, never
// delivered. Tools that act differently for the tour (email_send's dev
// mailbox) ask this, and refuse a call that claims and is not genuine.
func (r *Registry) TourCall(id, tool string) (claims, genuine bool) {
	return r.tour.verify(id, tool)
}

// TourContacts is the tour's demo address book (name → address), to
// resolve names only in calls for which TourCall is genuine.
func (r *Registry) TourContacts() map[string]string {
	return maps.Clone(r.tour.script.Contacts)
}

// New builds a Registry with the built-in providers openai, anthropic and
// scripted. It fails if cfg.Selection is malformed or names an unknown
// provider, or if cfg.ScriptFile is set but cannot be read.
func New(cfg Config) (*Registry, error) {
	cfg = cfg.withDefaults()
	var err error
	if cfg.OpenAIBaseURL, err = openAIBaseURL(cfg.OpenAIBaseURL); err != nil {
		return nil, err
	}
	if cfg.AnthropicBaseURL, err = anthropicBaseURL(cfg.AnthropicBaseURL); err != nil {
		return nil, err
	}
	r := &Registry{cfg: cfg, providers: map[string]Provider{}}
	r.providers[providerOpenAI] = newOpenAI(cfg)
	r.providers[providerAnthropic] = newAnthropic(cfg)
	sp, err := newScripted(cfg.ScriptFile)
	if err != nil {
		return nil, err
	}
	r.providers[providerScripted] = sp
	r.tour = sp.tour
	chain, err := ParseSelection(cfg.Selection)
	if err != nil {
		return nil, err
	}
	if err := r.check(chain); err != nil {
		return nil, err
	}
	r.selected = chain
	return r, nil
}

// Register adds or replaces a provider under p.Name().
func (r *Registry) Register(p Provider) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.providers[strings.ToLower(p.Name())] = p
}

// Selection returns the configured default chain (nil if none).
func (r *Registry) Selection() Chain { return slices.Clone(r.selected) }

func (r *Registry) provider(name string) (Provider, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	p, ok := r.providers[name]
	return p, ok
}

// Validate reports whether a selection names providers this registry has
// ("provider:model[,…]"); an empty selection is valid (the default).
func (r *Registry) Validate(selection string) error {
	chain, err := ParseSelection(selection)
	if err != nil {
		return err
	}
	return r.check(chain)
}

func (r *Registry) check(chain Chain) error {
	for _, t := range chain {
		if _, ok := r.provider(t.Provider); ok {
			continue
		}
		r.mu.RLock()
		known := make([]string, 0, len(r.providers))
		for name := range r.providers {
			known = append(known, name)
		}
		r.mu.RUnlock()
		sort.Strings(known)
		return newError(CodeUnknownProvider, false, nil,
			"unknown model provider %q in %q (known: %s)", t.Provider, t.String(), strings.Join(known, ", "))
	}
	return nil
}

// NotConfiguredHint is the one message for "no model is configured": the
// log says it at start, GET /v1/info returns it, the web chat shows it once,
// and a turn that finds no model fails with it.
const NotConfiguredHint = "No model is configured. Set GATEHOUSE_MODEL, e.g. GATEHOUSE_MODEL=openai:gpt-4.1-mini with OPENAI_API_KEY, " +
	"openai:<model> with OPENAI_BASE_URL for a local OpenAI-compatible server (Ollama, vLLM, llama.cpp), " +
	"anthropic:<model> with ANTHROPIC_API_KEY, or scripted:demo with GATEHOUSE_SCRIPT_FILE. " +
	"Without a key, the built-in tour (" + TourSelection + ") shows an approval card: \"Try the tour\" in the web chat."

// Call sends req to each target of chain in order until one answers; a nil
// chain means the configured Selection. Each target gets up to MaxRetries
// attempts under the retry rule. req.Model is replaced by each target's
// model, and system messages are moved to the head of req.Messages (in
// their order) before sending. For each target that failed before the one
// that answered, a Notice is returned. Text deltas of every attempt are
// passed to onDelta; deltas of a failed attempt are not part of the answer.
// If every target fails, the error is the last target's *Error, with a
// message naming all failures.
func (r *Registry) Call(ctx context.Context, chain Chain, req Request, onDelta func(text string)) (Response, []Notice, error) {
	if chain == nil {
		chain = r.selected
	}
	if len(chain) == 0 {
		return Response{}, nil, newError(CodeNotConfigured, false, nil, "%s", NotConfiguredHint)
	}
	if err := r.check(chain); err != nil {
		return Response{}, nil, err
	}
	if err := gh.CheckThinking(req.Thinking); err != nil {
		return Response{}, nil, newError(CodeBadRequest, false, err, "bad thinking level")
	}
	req.Messages = hoistSystem(req.Messages)

	type failure struct {
		target Target
		err    *Error
	}
	var failures []failure
	for _, t := range chain {
		p, _ := r.provider(t.Provider)
		resp, err := r.callTarget(ctx, p, t, req, onDelta)
		if err == nil {
			notices := make([]Notice, 0, len(failures))
			for _, f := range failures {
				notices = append(notices, Notice{
					Text:       fmt.Sprintf("%s failed (%s); answered by %s", f.target, f.err.Code, t),
					Failed:     f.target,
					Code:       f.err.Code,
					AnsweredBy: t,
				})
			}
			return resp, notices, nil
		}
		failures = append(failures, failure{t, err})
		if ctx.Err() != nil {
			break // the caller gave up: no fallback
		}
	}
	last := failures[len(failures)-1].err
	if len(failures) == 1 {
		return Response{}, nil, last
	}
	parts := make([]string, len(failures))
	for i, f := range failures {
		parts[i] = fmt.Sprintf("%s (%s)", f.target, f.err.Code)
		if f.err.Message != "" {
			parts[i] = fmt.Sprintf("%s (%s: %s)", f.target, f.err.Code, f.err.Message)
		}
	}
	return Response{}, nil, &Error{
		Code:       last.Code,
		Message:    "every model failed: " + strings.Join(parts, "; "),
		Retryable:  last.Retryable,
		RetryAfter: last.RetryAfter,
		Err:        last,
	}
}

// callTarget runs the attempts on one target.
func (r *Registry) callTarget(ctx context.Context, p Provider, t Target, req Request, onDelta func(string)) (Response, *Error) {
	req.Model = t.Model
	for attempt := 1; ; attempt++ {
		delivered := false
		deltas := func(s string) {
			if s == "" {
				return
			}
			delivered = true
			if onDelta != nil {
				onDelta(s)
			}
		}
		actx, cancel := context.WithTimeout(ctx, r.cfg.RequestTimeout)
		start := time.Now()
		resp, err := p.Stream(actx, req, deltas)
		dur := time.Since(start)
		attemptErr := actx.Err()
		cancel()

		var merr *Error
		if err != nil {
			merr = settle(err, ctx, attemptErr)
		}
		if merr == nil || merr.Code != CodeNotConfigured { // nothing was sent
			r.ledger(ctx, t, attempt, resp.Usage, dur, merr)
		}
		if merr == nil {
			resp.Provider, resp.Model = t.Provider, t.Model
			return resp, nil
		}
		if !merr.Retryable || delivered || attempt >= r.cfg.MaxRetries || merr.RetryAfter > MaxRetryAfter {
			return Response{}, merr
		}
		if sleep(ctx, backoff(r.cfg.RetryBase, attempt, merr.RetryAfter)) != nil {
			return Response{}, settle(ctx.Err(), ctx, nil)
		}
	}
}

// settle turns a provider error into an *Error and decides the context
// cases: when the caller's context has ended the call is over (never
// retried); when only the attempt's deadline passed it is a retryable
// model-timeout. A provider error that came from an HTTP status keeps its
// classification even if a deadline passed meanwhile.
func settle(err error, parent context.Context, attemptErr error) *Error {
	me := classifyTransport(err)
	switch me.Code {
	case CodeTimeout, CodeUnreachable, CodeCanceled, CodeUnknown, CodeBadResponse:
	default:
		return me
	}
	cause := err
	if me.Err != nil {
		cause = me.Err
	}
	if perr := parent.Err(); perr != nil {
		code := CodeCanceled
		if errors.Is(perr, context.DeadlineExceeded) {
			code = CodeTimeout
		}
		if errors.Is(cause, perr) {
			return &Error{Code: code, Message: "caller's context ended", Err: cause}
		}
		return &Error{Code: code, Message: "caller's context ended", Err: errors.Join(perr, cause)}
	}
	if errors.Is(attemptErr, context.DeadlineExceeded) {
		return &Error{Code: CodeTimeout, Message: "no complete answer within the request timeout", Retryable: true, Err: cause}
	}
	return me
}

func (r *Registry) ledger(ctx context.Context, t Target, attempt int, u gh.Usage, d time.Duration, err *Error) {
	if r.cfg.Ledger == nil {
		return
	}
	row := LedgerRow{
		Provider:     t.Provider,
		Model:        t.Model,
		Attempt:      attempt,
		InputTokens:  u.InputTokens,
		OutputTokens: u.OutputTokens,
		CostUSD:      r.cfg.cost(t.Provider, t.Model, u),
		Duration:     d,
	}
	if err != nil {
		row.Err = err.Error()
	}
	r.cfg.Ledger(ctx, row)
}

// hoistSystem returns msgs with the system messages first, each group in its
// original order. msgs is not modified.
func hoistSystem(msgs []Message) []Message {
	out := make([]Message, 0, len(msgs))
	for _, m := range msgs {
		if m.Role == RoleSystem {
			out = append(out, m)
		}
	}
	for _, m := range msgs {
		if m.Role != RoleSystem {
			out = append(out, m)
		}
	}
	return out
}
