package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/gatehouse/gatehouse/guard"
)

// guardPIDFile is where a running guard says who it is, for
// `gatehouse reload`: in the data directory, so one guard per install.
func guardPIDFile(cfg Config) string { return filepath.Join(cfg.DataDir, "guard.pid") }

// runGuard is `gatehouse guard [serve flags]`: it runs `gatehouse serve`
// with the same flags and environment as its child and keeps it running
// (package guard). SIGTERM and SIGINT are forwarded to the child, whose
// drain the guard waits for; SIGHUP reloads.
func runGuard(args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	cfg, code, ok := parseConfigFlags("guard", args, stdout, stderr, getenv, guardSettings)
	if !ok {
		return code
	}
	log := newLogger(cfg, stderr)
	exe, err := os.Executable()
	if err != nil {
		log.Error("guard: cannot find its own executable", "err", err)
		return 1
	}
	if err := privateDir(cfg.DataDir); err != nil {
		log.Error("guard: data directory", "dir", cfg.DataDir, "err", err)
		return 1
	}
	g, err := guard.New(guard.Config{
		Path: exe, Args: append([]string{"serve"}, args...), Env: os.Environ(), LivezURL: livezURL(cfg),
		Interval: cfg.GuardInterval, Failures: cfg.GuardFailures, StartGrace: cfg.GuardStartGrace,
		Backoff: cfg.GuardBackoff, MaxBackoff: cfg.GuardMaxBackoff, ReloadMaxWait: cfg.ReloadMaxWait,
		// The child's drain, and room for it to close the store.
		StopTimeout: cfg.DrainTimeout + 15*time.Second,
		PIDFile:     guardPIDFile(cfg), Stdout: stdout, Stderr: stderr, Logger: log,
	})
	if err != nil {
		log.Error("guard", "err", err)
		return 1
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP)
	defer signal.Stop(sigs)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for {
			select {
			case <-ctx.Done():
				return
			case sig := <-sigs:
				if sig == syscall.SIGHUP {
					g.Reload()
				} else {
					g.Signal(sig)
				}
			}
		}
	}()
	log.Info("guard started", "livez", livezURL(cfg), "interval", cfg.GuardInterval, "failures", cfg.GuardFailures)
	code, err = g.Run(ctx)
	if err != nil {
		log.Error("guard stopped with an error", "err", err)
	}
	return code
}

// runReload is `gatehouse reload [--config FILE]`: it signals the guard
// running on the configured data directory (SIGHUP, found through its pid
// file) and returns; the guard logs the reload's progress.
func runReload(args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	cfg, code, ok := parseConfigFlags("reload", args, stdout, stderr, getenv, guardSettings)
	if !ok {
		return code
	}
	pid, err := guard.SignalReload(guardPIDFile(cfg))
	if err != nil {
		fmt.Fprintln(stderr, "gatehouse reload:", err)
		return 1
	}
	fmt.Fprintf(stdout, "asked the guard (pid %d) to reload: claims pause, and the gateway restarts once no turn runs (at most %s)\n", pid, cfg.ReloadMaxWait)
	return 0
}

// guardSettings is the settings part of guard's and reload's help.
func guardSettings(w io.Writer) {
	fmt.Fprintln(w, "\nSettings: see gatehouse serve --help (GATEHOUSE_GUARD_*, GATEHOUSE_RELOAD_MAX_WAIT).")
}

// parseConfigFlags reads [--config FILE] and the configuration, as serve
// does; --help ends with settings. ok is false when the command should
// exit with code.
func parseConfigFlags(cmd string, args []string, stdout, stderr io.Writer, getenv func(string) string, settings func(io.Writer)) (cfg Config, code int, ok bool) {
	fs := flag.NewFlagSet(cmd, flag.ContinueOnError)
	fs.SetOutput(stderr)
	configFile := fs.String("config", "", "YAML config file; environment variables win over it")
	fs.Usage = func() {
		fmt.Fprintf(stdout, "Usage: gatehouse %s [--config FILE]\n\nFlags:\n", cmd)
		fs.SetOutput(stdout)
		fs.PrintDefaults()
		settings(stdout)
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return cfg, 0, false
		}
		return cfg, 2, false
	}
	cfg, err := loadConfig(*configFile, getenv)
	if err != nil {
		fmt.Fprintln(stderr, "gatehouse: configuration:", err)
		return cfg, 2, false
	}
	return cfg, 0, true
}

// livezURL is the child's /livez: on the probe listener when there is
// one, asked on loopback when it listens on every address.
func livezURL(cfg Config) string {
	addr := cfg.Addr
	if cfg.ProbeAddr != "" {
		addr = cfg.ProbeAddr
	}
	base, err := localBaseURL(addr)
	if err != nil {
		return "http://" + addr + "/livez"
	}
	return base + "/livez"
}
