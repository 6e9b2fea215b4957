package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	goredis "github.com/redis/go-redis/v9"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gateway/people"
	"github.com/gatehouse/gatehouse/gateway/uploads"
	"github.com/gatehouse/gatehouse/httpapi"
	"github.com/gatehouse/gatehouse/httpapi/openaiapi"
	"github.com/gatehouse/gatehouse/httpapi/web"
	"github.com/gatehouse/gatehouse/incidents"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/memory"
	"github.com/gatehouse/gatehouse/metrics"
	"github.com/gatehouse/gatehouse/models"
	"github.com/gatehouse/gatehouse/supervisor"
)

// privateDir creates dir with mode 0700, or sets an existing one to 0700:
// an install from before this was done is tightened at its next start.
// MkdirAll alone would not do: it leaves an existing directory as it is,
// and the umask could narrow the mode it creates.
func privateDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	st, err := os.Stat(dir)
	if err != nil {
		return err
	}
	if st.Mode().Perm() != 0o700 {
		return os.Chmod(dir, 0o700)
	}
	return nil
}

// serve runs the gateway until SIGTERM or SIGINT, then drains: readiness
// turns 503, HTTP stops accepting and finishes requests in flight, and the
// store closes. A second signal stops at once.
func serve(ctx context.Context, cfg Config, log *slog.Logger) error {
	sigs := make(chan os.Signal, 2)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT)
	defer signal.Stop(sigs)
	// SIGUSR1 pauses claims (a guard's reload waits for the running turns
	// to end), SIGUSR2 resumes them. Caught from the start: the default
	// action would end the process.
	pauses := make(chan os.Signal, 2)
	signal.Notify(pauses, syscall.SIGUSR1, syscall.SIGUSR2)
	defer signal.Stop(pauses)

	// The data directory holds the database, the spool and (by default)
	// the workspace: every conversation. Only the gateway's user may enter.
	if err := privateDir(cfg.DataDir); err != nil {
		return fmt.Errorf("data directory %s: %w", cfg.DataDir, err)
	}
	st, err := openStore(ctx, cfg, log)
	if err != nil {
		return err
	}
	defer st.Close()
	// Every /v1 request carries a credential, on loopback too: the
	// configured token, or the one kept in the store for every replica.
	apiToken, generatedToken, err := resolveAPIToken(ctx, cfg, st)
	if err != nil {
		return err
	}
	if err := writeTokenFile(cfg.DataDir, apiToken); err != nil {
		return fmt.Errorf("write %s: %w", filepath.Join(cfg.DataDir, apiTokenFile), err)
	}
	// From here the token is the configuration's: tool output is
	// scrubbed of it (cfg.Secrets) like any other key.
	cfg.APIToken = apiToken
	// /metrics's registry; om is nil with GATEHOUSE_METRICS=off.
	promReg, om := metrics.Registry(cfg.Metrics == "on", metrics.Config{Queue: st, Gates: st, Logger: log,
		Incidents: func(ctx context.Context) (int, error) { return incidents.OpenCount(ctx, st) }})
	k := kernel.New(st, om.Kernel(kernelConfig(cfg, log)))

	reg, err := newModels(cfg, om.Ledger(supervisor.Ledger(k, log)))
	if err != nil {
		return err
	}
	choices, err := chatChoices(cfg, reg)
	if err != nil {
		return err
	}
	// The gates service first: the gate's one home. The kinds of gates
	// opened outside a run (stuck turns' cards, shared-library cards) are
	// built with it and register with it; the tool worker opens its
	// gates through it.
	gateSvc, rdb, err := newGates(cfg, st, k, log)
	if err != nil {
		return err
	}
	inc := incidents.New(incidents.Config{Kernel: k, Store: st, StuckAfter: cfg.StuckAfter, Diagnose: supervisor.Diagnoser(reg), Logger: log,
		Gates: gateSvc})
	// The knowledge library (know.lib), its folder watcher and endpoints.
	know, err := newKnowledge(cfg, st, log)
	if err != nil {
		return err
	}
	// Files sent in a chat with /library (gateway/uploads): the gateway,
	// built below, fetches the files and is handed to it then
	// (UseFetcher).
	upl := uploads.New(uploads.Config{Kernel: k, Store: st, Library: know.lib, Logger: log, Gates: gateSvc})
	// The rule pass runs after every turn; the model pass is queued as a
	// job and run in the background — only when there is a model to run it.
	hasModel := len(reg.Selection()) > 0
	mem := memory.New(st, memory.Config{Logger: log, NoModelPass: !hasModel, Floor: cfg.MemoryFloor, Batch: cfg.MemoryBatch,
		EmbeddingsURL: cfg.EmbeddingsURL, EmbeddingsModel: cfg.EmbeddingsModel, EmbeddingsAPIKey: cfg.EmbeddingsAPIKey})
	tour := newTourWiring(cfg, reg)
	installID, err := resolveInstallID(ctx, st)
	if err != nil {
		return err
	}
	worker, closeTools, isolation, err := newToolWorker(ctx, cfg, installID, k, mem, know.lib, gateSvc, log, tour)
	if err != nil {
		return err
	}
	defer closeTools()
	ready := []httpapi.Pinger{st}
	if rdb != nil {
		defer rdb.Close()
		ready = append(ready, redisPinger{rdb})
	}
	sup, err := supervisor.New(supervisor.Config{
		Kernel: k, Models: reg, Tools: worker, Memory: mem, Knowledge: know.lib, Workers: cfg.Workers, Location: cfg.Location(), Zones: st, Logger: log,
		ContextWindow: cfg.ContextWindow, CompactionShare: cfg.CompactionShare, MaxModelRequests: cfg.MaxModelRequests, TurnTimeout: cfg.TurnTimeout,
		DailyBudgetUSD: cfg.DailyBudgetUSD, BudgetAlertShare: cfg.BudgetAlertShare,
		SpoolDir:     filepath.Join(cfg.DataDir, "spool"),
		ChatSettings: st, ChatModels: choices,
	})
	if err != nil {
		return err
	}
	pauseCtx, stopPauses := context.WithCancel(ctx)
	defer stopPauses()
	go pauseOnSignal(pauseCtx, pauses, sup, log)

	gw, err := newGateway(cfg, st, k, gateSvc, upl, choices, promReg, log)
	if err != nil {
		return err
	}
	if gw != nil {
		upl.UseFetcher(gw.Fetcher)
	}
	apiCfg := httpapi.Config{
		Addr: cfg.Addr, Ready: ready, Workers: sup, LiveStaleAfter: liveStaleAfter(sup.Poll()), Logger: log, Gates: gateSvc, Memory: mem, People: people.NewAdmin(st, nil),
		Kernel: k, Store: st, APIToken: cfg.APIToken, MaxBodyBytes: int64(cfg.MaxBodyBytes), Web: web.Handler(),
		Model: reg.Selection().String(), ModelHint: models.NotConfiguredHint, Version: versionString(), CheckSelection: reg.Validate,
		Missing: missingSettings(cfg, hasModel, gw != nil), DevMail: tour.mail.Mailbox,
		Metrics: promhttp.HandlerFor(promReg, promhttp.HandlerOpts{}), Knowledge: know.api,

		// HTTP limits. The database pool's connections are files too:
		// they come out of the headroom the connection cap leaves.
		ReadTimeout: cfg.HTTPReadTimeout, WriteTimeout: cfg.HTTPWriteTimeout, IdleTimeout: cfg.HTTPIdleTimeout,
		MaxHeaderBytes: cfg.HTTPMaxHeaderBytes, MaxConns: cfg.HTTPMaxConns, MaxStreams: cfg.HTTPMaxStreams, ProbeAddr: cfg.ProbeAddr,
		FileHeadroom: 256 + cfg.DatabaseMaxConns,
		Isolation:    isolation,
		Tools:        worker.Tools(),
		ChatModels:   choices,
	}
	if gw != nil {
		apiCfg.Admin, apiCfg.Hooks = gw, gw.Handlers()
	} else {
		apiCfg.NoPlatformHint = noPlatformHint()
	}
	logMissing(log, apiCfg.Missing)
	// Chat frontends and SDKs that speak OpenAI's API (httpapi/openaiapi).
	apiCfg.OpenAI = openaiapi.New(openaiapi.Config{Kernel: k, PublicURL: cfg.PublicURL, MaxBodyBytes: int64(cfg.MaxBodyBytes),
		ReadTimeout: cfg.HTTPReadTimeout, WriteTimeout: cfg.HTTPWriteTimeout, Logger: log})
	api := httpapi.New(apiCfg)

	// Started in this order, drained in reverse: HTTP stops taking
	// requests first, then the workers finish or hand back their turns,
	// then the gateway delivers their last answers and gives its platform
	// leases up, then the gate sweeper and the memory jobs stop — all
	// before the store closes (deferred above).
	group := &runGroup{log: log}
	group.add("metrics lookups", om) // first in, last out: every commit before it stops is observed
	if hasModel {
		group.add("memory jobs", memory.NewWorker(mem, supervisor.ModelExtractor(reg)))
	}
	group.add("gate sweeper", gateSvc)
	group.add("incident sweeper", inc)
	group.add("library uploads", upl)
	know.add(group)
	if gw != nil {
		group.add("chat platforms", gw)
	}
	group.add("workers", sup)
	group.add("http", api)
	if err := group.start(ctx); err != nil {
		return err
	}
	if gw != nil {
		log.Info("chat platforms started", "platforms", gw.Platforms())
	}
	log.Info("gatehouse started", "version", versionString(), "store", st.Dialect(), "addr", api.Addr(), "model", reg.Selection().String())
	logLogin(log, cfg.PublicURL, api.Addr(), cfg.APIToken, generatedToken)

	var serveErr error
	select {
	case sig := <-sigs:
		log.Info("draining", "signal", sig.String(), "timeout", cfg.DrainTimeout)
	case err := <-api.Done():
		serveErr = fmt.Errorf("http server: %w", err)
		log.Error("http server failed; draining", "err", err)
	}
	drainCtx, cancel := context.WithTimeout(context.Background(), cfg.DrainTimeout)
	defer cancel()
	go func() {
		select {
		case sig := <-sigs:
			log.Warn("second signal: stopping now", "signal", sig.String())
			os.Exit(1)
		case <-drainCtx.Done():
		}
	}()
	start := time.Now()
	// Each service logs what did not stop in time; the drain still ends
	// with the store closed and exit 0, since nothing acknowledged
	// depends on it.
	_ = group.stop(drainCtx)
	if serveErr != nil {
		return serveErr
	}
	log.Info("drained", "took", time.Since(start).Round(time.Millisecond))
	return nil
}

func newModels(cfg Config, ledger func(context.Context, models.LedgerRow)) (*models.Registry, error) {
	prices, err := parsePrices(cfg.Prices)
	if err != nil {
		return nil, err
	}
	thinking, err := parseThinkingModels(cfg.ThinkingModels)
	if err != nil {
		return nil, err
	}
	return models.New(models.Config{
		Selection:    cfg.Model,
		OpenAIAPIKey: cfg.OpenAIAPIKey, OpenAIBaseURL: cfg.OpenAIBaseURL,
		AnthropicAPIKey: cfg.AnthropicAPIKey, AnthropicBaseURL: cfg.AnthropicBaseURL,
		ScriptFile: cfg.ScriptFile, RequestTimeout: cfg.ModelTimeout, MaxRetries: cfg.ModelRetries,
		Prices: prices, Ledger: ledger, ThinkingModels: thinking,
	})
}

// chatChoices are the selections a chat may pick (GATEHOUSE_CHAT_MODELS,
// else the configured chain alone). Each must name providers the registry
// has: a list a chat could pick a broken model from is refused at start,
// not found out by the chat's next turn.
func chatChoices(cfg Config, reg *models.Registry) (models.ChatChoices, error) {
	choices, err := models.ParseChatChoices(cfg.ChatModels)
	if err != nil {
		return nil, fmt.Errorf("GATEHOUSE_CHAT_MODELS: %w", err)
	}
	if len(choices) == 0 && len(reg.Selection()) > 0 {
		return models.ChatChoices{reg.Selection()}, nil
	}
	for _, c := range choices {
		if err := reg.Validate(c.String()); err != nil {
			return nil, fmt.Errorf("GATEHOUSE_CHAT_MODELS: %s cannot be used: %w", c, err)
		}
	}
	return choices, nil
}

// liveStaleAfter is how old the claim loop's heartbeat may be before
// /livez fails: the loop goes round at least once a poll, even while it
// backs off from a store that refuses claims (a database that is down must
// not read as a dead process), so a few polls, plus time for one claim
// that is slow to answer.
func liveStaleAfter(poll time.Duration) time.Duration { return 5*poll + 10*time.Second }

// pauseOnSignal pauses the workers' claims on SIGUSR1 and resumes them on
// SIGUSR2, until ctx ends.
func pauseOnSignal(ctx context.Context, sigs <-chan os.Signal, sup *supervisor.Supervisor, log *slog.Logger) {
	for {
		select {
		case <-ctx.Done():
			return
		case sig := <-sigs:
			if sig == syscall.SIGUSR1 {
				sup.Pause()
				log.Info("claims paused; running turns go on", "running", sup.Running())
			} else {
				sup.Resume()
				log.Info("claims resumed")
			}
		}
	}
}

// redisPinger lets /readyz check Redis.
type redisPinger struct{ c *goredis.Client }

func (p redisPinger) Ping(ctx context.Context) error {
	if err := p.c.Ping(ctx).Err(); err != nil {
		return gh.Wrap(gh.CodeUnavailable, err, "redis: ping")
	}
	return nil
}
