package stacktest

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/adapters/adaptertest"
	"github.com/gatehouse/gatehouse/gates"
	"github.com/gatehouse/gatehouse/gateway"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/gateway/people"
	"github.com/gatehouse/gatehouse/gateway/uploads"
	"github.com/gatehouse/gatehouse/httpapi"
	"github.com/gatehouse/gatehouse/incidents"
	"github.com/gatehouse/gatehouse/internal/testing/testenv"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/knowledge"
	"github.com/gatehouse/gatehouse/knowledge/knowledgetool"
	"github.com/gatehouse/gatehouse/memory"
	"github.com/gatehouse/gatehouse/models"
	"github.com/gatehouse/gatehouse/models/modeltest"
	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/store/sqlite"
	"github.com/gatehouse/gatehouse/supervisor"
	"github.com/gatehouse/gatehouse/tools"
	"github.com/gatehouse/gatehouse/toolworker"
)

// Env is a whole gateway — store, kernel, supervisor with a fake model,
// a tool worker, the gate service, the gateway and, when asked, the HTTP
// API — wired to one adapter and its fake platform, or to none.
type Env struct {
	T      testing.TB
	Ctx    context.Context
	Store  store.Store
	Kernel *kernel.Kernel
	// Model is the fake OpenAI server the turns call; nil when
	// EnvOptions.Script gave the scripted model instead.
	Model *modeltest.OpenAI
	// Memory is set with EnvOptions.Memory.
	Memory *memory.Memory
	// Knowledge is set with EnvOptions.Knowledge (on Store).
	Knowledge *knowledge.Library
	// Uploads answers /library (with EnvOptions.Knowledge): files sent
	// in the chat, fetched by the Env's adapter.
	Uploads *uploads.Service
	Gates   *gates.Service
	// Incidents is set with EnvOptions.StuckAfter.
	Incidents *incidents.Service
	// Gateway, Adapter and Fake are nil without a factory (web/API only).
	Gateway *gateway.Gateway
	Adapter chat.Adapter
	Fake    adaptertest.Fake
	// HTTP and Addr (host:port on loopback) are set with EnvOptions.HTTP.
	HTTP *httpapi.Server
	Addr string
	// Token is the API token the HTTP server requires (EnvOptions.HTTP's
	// APIToken, or TestToken when that is empty).
	Token string
	// Posted counts runs of the default danger tool post_note.
	Posted atomic.Int32

	metrics Metrics // EnvOptions.Metrics
	// chatModels are the selections a chat may pick (EnvOptions.ChatModels).
	chatModels models.ChatChoices
}

// Metrics is what serve wires of package metrics (*metrics.Metrics is
// one): the kernel's observer and a wrapper of the ledger hook.
type Metrics interface {
	Observe(sessionID string, events []gh.Event)
	Ledger(next func(context.Context, models.LedgerRow)) func(context.Context, models.LedgerRow)
}

// EnvOptions adjust an Env. The zero value is the stack the adapter
// suite drives.
type EnvOptions struct {
	// Allowed are user handles allowed on the platform; "*" allows
	// everyone and an empty, non-nil list nobody. Defaults to alice.
	Allowed []string
	// Pairing turns the gateway's pairing on (codes for strangers).
	Pairing bool
	// Approvers, ApproversAllowed and ApprovalChat are the gateway's
	// approver rule and approval chat, by user and chat handle (see
	// adaptertest.StackOptions).
	Approvers        []string
	ApproversAllowed bool
	ApprovalChat     string
	// FloodLimit defaults to the gateway's default (30).
	FloodLimit int
	// Store, when set, is used instead of a fresh SQLite file; the caller
	// closes it, after the Env's cleanups.
	Store store.Store
	// NoStart leaves the gateway stopped (webhook benchmarks start nothing
	// but the handler; Receive works without Start).
	NoStart bool
	// NoWorkers starts no supervisor: the test claims and commits turns
	// itself.
	NoWorkers bool
	// Poll is the supervisor's wait between claims without a wake-up.
	// Defaults to 20 ms.
	Poll time.Duration
	// GateSweep is how often the gate sweeper runs. Defaults to 50 ms
	// (tests of expiry want it quick; serve sweeps every second).
	GateSweep time.Duration
	// Tools, when set, are the tool worker's tools instead of post_note.
	Tools []tools.Tool
	// GrantableNotes makes post_note offer "Approve for this chat" (see
	// adaptertest.StackOptions).
	GrantableNotes bool
	// Script, when set, is a script for the scripted model (a JSON list of
	// models.ScriptStep, selection scripted:demo), which answers instead of
	// the fake OpenAI server.
	Script string
	// Memory gives the supervisor and the HTTP API a memory (rule pass
	// only, no model pass); the tool worker's email check then resolves
	// names against the asking person's remembered contacts.
	Memory bool
	// MemoryTools registers memory's remember and forget beside the
	// tools (with Memory).
	MemoryTools bool
	// Knowledge gives the supervisor a knowledge library on the Env's
	// store (Env.Knowledge) and registers search_library beside the tools.
	Knowledge bool
	// ModelPass makes Memory queue a model-pass job per person and turn
	// too; nothing runs the jobs but the test (Memory.RunJobs).
	ModelPass bool
	// LogLevel is the lowest level the stack logs to the test. Defaults to
	// warn.
	LogLevel slog.Leveler
	// HTTP, when set, starts the HTTP API (httpapi.New) with these fields
	// (APIToken, Web, Admin …) on a loopback port. Those left empty among
	// Addr, Logger, Kernel, Store, Gates, Memory, People and Model are the
	// Env's; with a platform, Admin and Hooks are the gateway's.
	HTTP *httpapi.Config
	// Metrics, when set, observes the kernel's commits and wraps the
	// ledger hook, as serve does with GATEHOUSE_METRICS=on.
	Metrics Metrics
	// StuckAfter, when set, starts the incidents service (Env.Incidents)
	// with that stuck interval, sweeping every 50 ms, its decisions
	// logged by the gate service, diagnoses by the Env's model.
	StuckAfter time.Duration
	// LeaseTTL is the kernel's lease TTL (renewals, which record a run's
	// step, come every third of it). Defaults to the kernel's 30s.
	LeaseTTL time.Duration
	// ChatModels are the selections a chat may pick (GATEHOUSE_CHAT_MODELS,
	// for /model and the web chat's selector); the supervisor reads the
	// chats' choices from the store, as serve's does. Defaults to the
	// configured model alone.
	ChatModels string
}

// NewEnv starts an Env for the platform the factory makes, or with a nil
// factory an Env without a chat platform (the web chat and the API).
// Everything it starts is stopped when the test ends.
func NewEnv(t testing.TB, factory adaptertest.Factory, o EnvOptions) *Env {
	t.Helper()
	ctx := context.Background()
	st := o.Store
	if st == nil {
		s, err := sqlite.Open(ctx, sqlite.Config{Path: filepath.Join(t.TempDir(), "gatehouse.db")})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		st = s
	}
	e := &Env{T: t, Ctx: ctx, Store: st, metrics: o.Metrics}
	level := o.LogLevel
	if level == nil {
		level = slog.LevelWarn
	}
	log := slog.New(slog.NewTextHandler(adaptertest.LogWriter(t), &slog.HandlerOptions{Level: level}))
	kcfg := kernel.Config{RetryBackoff: time.Millisecond, LeaseTTL: o.LeaseTTL}
	if o.Metrics != nil {
		kcfg.Observer = o.Metrics.Observe
	}
	e.Kernel = kernel.New(st, kcfg)
	if o.Memory {
		e.Memory = memory.New(st, memory.Config{NoModelPass: !o.ModelPass})
	}
	if o.Knowledge {
		lib, err := knowledge.New(st, knowledge.Config{Logger: log})
		if err != nil {
			t.Fatal(err)
		}
		e.Knowledge = lib
	}
	reg := e.models(o.Script)
	choices, err := models.ParseChatChoices(o.ChatModels)
	if err != nil {
		t.Fatal(err)
	}
	if len(choices) == 0 {
		choices = models.ChatChoices{reg.Selection()}
	}
	e.chatModels = choices
	sweep := o.GateSweep
	if sweep <= 0 {
		sweep = 50 * time.Millisecond
	}
	// The gates service first: the kinds register with it.
	e.Gates = gates.NewService(gates.Config{Registry: gates.NewSQL(st, nil), Kernel: e.Kernel, Store: st, Sweep: sweep, Logger: log})
	if e.Knowledge != nil {
		e.Uploads = uploads.New(uploads.Config{Kernel: e.Kernel, Store: st, Library: e.Knowledge, Logger: log, Gates: e.Gates,
			Fetcher: func(platform string) (chat.FileFetcher, bool) {
				if e.Gateway == nil {
					return nil, false
				}
				return e.Gateway.Fetcher(platform)
			}})
		t.Cleanup(func() { e.stop("uploads", e.Uploads.Stop) })
	}
	if o.StuckAfter > 0 {
		e.Incidents = incidents.New(incidents.Config{Kernel: e.Kernel, Store: st, StuckAfter: o.StuckAfter, Sweep: 50 * time.Millisecond,
			Diagnose: supervisor.Diagnoser(reg), Logger: log, Gates: e.Gates})
	}
	if e.Incidents != nil {
		if err := e.Incidents.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { e.Incidents.Stop(context.Background()) })
	}
	if err := e.Gates.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Gates.Stop(context.Background()) })
	if !o.NoWorkers {
		e.startWorkers(reg, o, log)
	}
	if factory != nil {
		e.startGateway(factory, o, log)
	}
	if o.HTTP != nil {
		e.startHTTP(*o.HTTP, reg, log)
	}
	return e
}

// models builds the registry: the scripted model when script is set,
// else the fake OpenAI server answering "ok" unless told otherwise.
func (e *Env) models(script string) *models.Registry {
	cfg := models.Config{RetryBase: time.Millisecond, MaxRetries: 1, Ledger: supervisor.Ledger(e.Kernel, nil)}
	if e.metrics != nil {
		cfg.Ledger = e.metrics.Ledger(cfg.Ledger)
	}
	if script != "" {
		cfg.Selection, cfg.ScriptFile = "scripted:demo", filepath.Join(e.T.TempDir(), "script.json")
		if err := os.WriteFile(cfg.ScriptFile, []byte(script), 0o600); err != nil {
			e.T.Fatal(err)
		}
	} else {
		e.Model = modeltest.NewOpenAI(e.T, "test-key")
		e.Model.SetDefault(modeltest.Reply{Text: "ok"})
		cfg.Selection, cfg.OpenAIAPIKey, cfg.OpenAIBaseURL = "openai:test-model", "test-key", e.Model.BaseURL()
	}
	reg, err := models.New(cfg)
	if err != nil {
		e.T.Fatal(err)
	}
	return reg
}

func (e *Env) startWorkers(reg *models.Registry, o EnvOptions, log *slog.Logger) {
	ts := o.Tools
	if ts == nil {
		note := toolworker.FuncTool{ToolName: "post_note", Desc: "Posts a note where everyone sees it.", ToolTier: tools.Danger,
			Fn: func(ctx context.Context, c tools.Call) (string, error) { e.Posted.Add(1); return "posted", nil }}
		ts = []tools.Tool{note}
		if o.GrantableNotes {
			ts = []tools.Tool{grantableNote{note}}
		}
	}
	var contacts toolworker.Contacts
	if e.Memory != nil {
		contacts = e.Memory.Contacts
		if o.MemoryTools {
			ts = append(append([]tools.Tool(nil), ts...), e.Memory.Tools()...)
		}
	}
	// A nil *Library in the interface would not be nil: set only with one.
	var lib supervisor.Recaller
	if e.Knowledge != nil {
		lib, ts = e.Knowledge, append(append([]tools.Tool(nil), ts...), knowledgetool.New(e.Knowledge))
	}
	worker := toolworker.New(toolworker.Config{Kernel: e.Kernel, Tools: tools.NewRegistry(ts...), Contacts: contacts, ApprovalTimeout: time.Hour, Gates: e.Gates, Logger: log})
	poll := o.Poll
	if poll == 0 {
		poll = 20 * time.Millisecond
	}
	sup, err := supervisor.New(supervisor.Config{Kernel: e.Kernel, Models: reg, Tools: worker, Memory: e.Memory, Knowledge: lib, Zones: e.Store, Poll: poll, Logger: log,
		ChatSettings: e.Store, ChatModels: e.chatModels})
	if err != nil {
		e.T.Fatal(err)
	}
	if err := sup.Start(e.Ctx); err != nil {
		e.T.Fatal(err)
	}
	e.T.Cleanup(func() { e.stop("supervisor", sup.Stop) })
}

func (e *Env) startGateway(factory adaptertest.Factory, o EnvOptions, log *slog.Logger) {
	e.Adapter, e.Fake = factory(e.T)
	allowed := o.Allowed
	if allowed == nil {
		allowed = []string{"alice"}
	}
	ids := []string{}
	for _, h := range allowed {
		if h != "*" {
			h = e.Fake.UserID(h)
		}
		ids = append(ids, h)
	}
	platform := e.Adapter.Platform()
	var approvers people.Approvers
	approvers.Default.Allowed = o.ApproversAllowed
	for _, h := range o.Approvers {
		approvers.Default.Users = append(approvers.Default.Users, people.Approver{Platform: platform, UserID: e.Fake.UserID(h)})
	}
	var approvalChat gh.Address
	if o.ApprovalChat != "" {
		approvalChat = gh.Address{Platform: platform, ChatID: e.Fake.ChatID(o.ApprovalChat)}
	}
	e.Gateway = gateway.New(gateway.Config{Kernel: e.Kernel, Store: e.Store, Gates: e.Gates, Adapters: []chat.Adapter{e.Adapter},
		Allowed: map[string][]string{platform: ids}, Approvers: approvers, ApprovalChat: approvalChat, Uploads: e.Uploads,
		Pairing: o.Pairing, FloodLimit: o.FloodLimit, Poll: 50 * time.Millisecond, LeaseTTL: 3 * time.Second, Logger: log,
		ChatModels: e.chatModels, Model: e.chatModels[0].String()})
	if o.NoStart {
		return
	}
	if err := e.Gateway.Start(e.Ctx); err != nil {
		e.T.Fatal(err)
	}
	e.T.Cleanup(func() { e.stop("gateway", e.Gateway.Stop) })
}

func (e *Env) startHTTP(cfg httpapi.Config, reg *models.Registry, log *slog.Logger) {
	if cfg.Addr == "" {
		cfg.Addr = "127.0.0.1:0"
	}
	if cfg.Logger == nil {
		cfg.Logger = log
	}
	if cfg.Kernel == nil {
		cfg.Kernel, cfg.Store = e.Kernel, e.Store
	}
	if cfg.APIToken == "" {
		cfg.APIToken = TestToken // the API has no open mode
	}
	e.Token = cfg.APIToken
	if cfg.Gates == nil {
		cfg.Gates = e.Gates
	}
	if cfg.Memory == nil && e.Memory != nil {
		cfg.Memory = e.Memory
	}
	if cfg.Model == "" {
		cfg.Model = reg.Selection().String()
	}
	if cfg.People == nil {
		cfg.People = people.NewAdmin(e.Store, nil)
	}
	if cfg.ChatModels == nil {
		cfg.ChatModels = e.chatModels
	}
	if e.Gateway != nil {
		if cfg.Admin == nil {
			cfg.Admin = e.Gateway
		}
		if cfg.Hooks == nil {
			cfg.Hooks = e.Gateway.Handlers()
		}
	}
	e.HTTP = httpapi.New(cfg)
	if err := e.HTTP.Start(e.Ctx); err != nil {
		e.T.Fatal(err)
	}
	e.T.Cleanup(func() { e.stop("http", e.HTTP.Stop) })
	e.Addr = e.HTTP.Addr()
}

// TestToken is the API token of an Env's HTTP server when EnvOptions.HTTP
// names none.
const TestToken = "stacktest-api-token"

// Authorize adds the Env's API token to req and returns it.
func (e *Env) Authorize(req *http.Request) *http.Request {
	req.Header.Set("Authorization", "Bearer "+e.Token)
	return req
}

// stop stops one part of the stack within 10 s; an error fails the test.
func (e *Env) stop(what string, stop func(context.Context) error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := stop(ctx); err != nil {
		e.T.Errorf("%s stop: %v", what, err)
	}
}

// Eventually polls cond until it holds (testenv.Eventually).
func (e *Env) Eventually(what string, cond func() bool) {
	e.T.Helper()
	testenv.Eventually(e.T, what, cond)
}

// Eventually is testenv.Eventually, the one polling helper of the tests.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	testenv.Eventually(t, what, cond)
}

// Stack is NewEnv as the shared adapter suite takes it:
//
//	adaptertest.Run(t, stacktest.Stack, telegramtest.TelegramFactory)
func Stack(t testing.TB, factory adaptertest.Factory, o adaptertest.StackOptions) adaptertest.Stack {
	t.Helper()
	e := NewEnv(t, factory, EnvOptions{Allowed: o.Allowed, Approvers: o.Approvers, ApproversAllowed: o.ApproversAllowed, ApprovalChat: o.ApprovalChat,
		GrantableNotes: o.GrantableNotes, ChatModels: o.ChatModels})
	return adaptertest.Stack{Ctx: e.Ctx, Store: e.Store, Kernel: e.Kernel, Model: e.Model, Gates: e.Gates,
		Adapter: e.Adapter, Fake: e.Fake, Posted: func() int32 { return e.Posted.Load() }}
}

// Receive returns the first receive-log row of an update, waiting for it.
func (e *Env) Receive(update string) store.ReceiveEntry {
	e.T.Helper()
	return adaptertest.WaitReceive(e.T, e.Ctx, e.Store, e.Adapter.Platform(), update)
}

// grantableNote is post_note offering "Approve for this chat": the bound
// is the note's text, so a grant covers posting the same note again.
type grantableNote struct{ toolworker.FuncTool }

func (grantableNote) GrantBound(args json.RawMessage) (bound, label string, ok bool) {
	var a struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(args, &a) != nil || a.Text == "" {
		return "", "", false
	}
	return a.Text, "the note " + strconv.Quote(a.Text), true
}
