package stacktest

import (
	"context"
	"log/slog"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/adapters/adaptertest"
	"github.com/gatehouse/gatehouse/gates"
	"github.com/gatehouse/gatehouse/gateway"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/models"
	"github.com/gatehouse/gatehouse/models/modeltest"
	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/store/sqlite"
	"github.com/gatehouse/gatehouse/supervisor"
	"github.com/gatehouse/gatehouse/tools"
	"github.com/gatehouse/gatehouse/toolworker"
)

// Env is a whole gateway — store, kernel, supervisor with a fake model,
// a tool worker with one danger tool, the gate service and the gateway —
// wired to one adapter and its fake platform.
type Env struct {
	T       testing.TB
	Ctx     context.Context
	Store   store.Store
	Kernel  *kernel.Kernel
	Model   *modeltest.OpenAI
	Gates   *gates.Service
	Gateway *gateway.Gateway
	Adapter gateway.Adapter
	Fake    adaptertest.Fake
	// Posted counts runs of the danger tool post_note.
	Posted atomic.Int32
}

// EnvOptions adjust an Env.
type EnvOptions struct {
	// Allowed are user handles allowed on the platform. Defaults to alice.
	Allowed []string
	// FloodLimit defaults to the gateway's default (30).
	FloodLimit int
	// Store, when set, is used instead of a fresh SQLite file.
	Store store.Store
	// NoStart leaves the gateway stopped (webhook benchmarks start nothing
	// but the handler).
	NoStart bool
}

// NewEnv starts an Env for the platform the factory makes.
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
	e := &Env{T: t, Ctx: ctx, Store: st}
	log := slog.New(slog.NewTextHandler(adaptertest.LogWriter(t), &slog.HandlerOptions{Level: slog.LevelWarn}))
	e.Kernel = kernel.New(st, kernel.Config{RetryBackoff: time.Millisecond})
	e.Model = modeltest.NewOpenAI(t, "test-key")
	e.Model.SetDefault(modeltest.Reply{Text: "ok"})
	reg, err := models.New(models.Config{Selection: "openai:test-model", OpenAIAPIKey: "test-key", OpenAIBaseURL: e.Model.BaseURL(),
		RetryBase: time.Millisecond, MaxRetries: 1, Ledger: supervisor.Ledger(e.Kernel, nil)})
	if err != nil {
		t.Fatal(err)
	}
	e.Gates = gates.NewService(gates.Config{Registry: gates.NewSQL(st, nil), Kernel: e.Kernel, Store: st, Sweep: 50 * time.Millisecond, Logger: log})
	if err := e.Gates.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Gates.Stop(context.Background()) })
	post := toolworker.FuncTool{ToolName: "post_note", Desc: "Posts a note where everyone sees it.", ToolTier: tools.Danger,
		Fn: func(ctx context.Context, c tools.Call) (string, error) { e.Posted.Add(1); return "posted", nil }}
	worker := toolworker.New(toolworker.Config{Kernel: e.Kernel, Tools: tools.NewRegistry(post), ApprovalTimeout: time.Hour, OnOpen: e.Gates.Opened})
	sup, err := supervisor.New(supervisor.Config{Kernel: e.Kernel, Models: reg, Tools: worker, Poll: 20 * time.Millisecond, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if err := sup.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		sup.Stop(c)
	})
	e.Adapter, e.Fake = factory(t)
	allowed := o.Allowed
	if allowed == nil {
		allowed = []string{"alice"}
	}
	var ids []string
	for _, h := range allowed {
		ids = append(ids, e.Fake.UserID(h))
	}
	e.Gateway = gateway.New(gateway.Config{Kernel: e.Kernel, Store: st, Gates: e.Gates, Adapters: []gateway.Adapter{e.Adapter},
		Allowed: map[string][]string{e.Adapter.Platform(): ids}, FloodLimit: o.FloodLimit, Poll: 50 * time.Millisecond, LeaseTTL: 3 * time.Second, Logger: log})
	if !o.NoStart {
		if err := e.Gateway.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			c, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			e.Gateway.Stop(c)
		})
	}
	return e
}

// Eventually polls cond until it holds or 10 s pass.
func (e *Env) Eventually(what string, cond func() bool) {
	e.T.Helper()
	Eventually(e.T, what, cond)
}

// Eventually polls cond every 10 ms until it holds; after 10 s the test
// fails (the timeout only keeps a broken test from hanging). It is
// adaptertest.Eventually, which the fakes' own tests use below the stack.
func Eventually(t testing.TB, what string, cond func() bool) {
	t.Helper()
	adaptertest.Eventually(t, what, cond)
}

// Stack is NewEnv as the shared adapter suite takes it:
//
//	adaptertest.Run(t, stacktest.Stack, telegramtest.TelegramFactory)
func Stack(t testing.TB, factory adaptertest.Factory, o adaptertest.StackOptions) adaptertest.Stack {
	t.Helper()
	e := NewEnv(t, factory, EnvOptions{Allowed: o.Allowed})
	return adaptertest.Stack{Ctx: e.Ctx, Store: e.Store, Kernel: e.Kernel, Model: e.Model, Gates: e.Gates,
		Adapter: e.Adapter, Fake: e.Fake, Posted: func() int32 { return e.Posted.Load() }}
}

// Receive returns the first receive-log row of an update, waiting for it.
func (e *Env) Receive(update string) store.ReceiveEntry {
	e.T.Helper()
	return adaptertest.WaitReceive(e.T, e.Ctx, e.Store, e.Adapter.Platform(), update)
}
