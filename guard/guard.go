package guard

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"syscall"
	"time"

	gh "github.com/gatehouse/gatehouse"
)

// Config configures the guard.
type Config struct {
	// Path is the child's executable and Args its arguments (without the
	// program name). Required.
	Path string
	Args []string
	// Env is the child's environment. Defaults to os.Environ().
	Env []string
	// LivezURL is the child's liveness probe (http://127.0.0.1:8080/livez).
	// Required.
	LivezURL string
	// Interval is the time between two probes. Defaults to 5s.
	Interval time.Duration
	// Failures is how many probes in a row must fail before the child is
	// killed and restarted. Defaults to 3.
	Failures int
	// ProbeTimeout bounds one probe; no answer in time is a failure.
	// Defaults to Interval.
	ProbeTimeout time.Duration
	// StartGrace is how long a new child has to answer its first probe
	// (migrations run at start); failures before that are not counted.
	// Defaults to 60s.
	StartGrace time.Duration
	// Backoff is the wait before the first restart; each restart in a row
	// doubles it, up to MaxBackoff. A child that ran longer than
	// MaxBackoff starts the sequence over. Default to 1s and 1m.
	Backoff, MaxBackoff time.Duration
	// ReloadMaxWait bounds how long a reload waits for the child's running
	// turns before stopping it anyway (its drain then hands what is left
	// back). Defaults to 2m.
	ReloadMaxWait time.Duration
	// StopTimeout is how long a stopped child has to exit after SIGTERM
	// before it is killed. Defaults to 45s (the gateway's 30s drain and
	// some room).
	StopTimeout time.Duration
	// PIDFile, when set, is where the guard writes its pid while it runs,
	// for `gatehouse reload` (SignalReload). Defaults to empty: none.
	PIDFile string
	// Stdout and Stderr are the child's. Default to os.Stdout, os.Stderr.
	Stdout, Stderr io.Writer
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.Env == nil {
		c.Env = os.Environ()
	}
	if c.Interval <= 0 {
		c.Interval = 5 * time.Second
	}
	if c.Failures <= 0 {
		c.Failures = 3
	}
	if c.ProbeTimeout <= 0 {
		c.ProbeTimeout = c.Interval
	}
	if c.StartGrace <= 0 {
		c.StartGrace = time.Minute
	}
	if c.Backoff <= 0 {
		c.Backoff = time.Second
	}
	if c.MaxBackoff <= 0 {
		c.MaxBackoff = time.Minute
	}
	c.MaxBackoff = max(c.MaxBackoff, c.Backoff)
	if c.ReloadMaxWait <= 0 {
		c.ReloadMaxWait = 2 * time.Minute
	}
	if c.StopTimeout <= 0 {
		c.StopTimeout = 45 * time.Second
	}
	if c.Stdout == nil {
		c.Stdout = os.Stdout
	}
	if c.Stderr == nil {
		c.Stderr = os.Stderr
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	return c
}

// process is a running child: the real one (osProcess) or a test's fake.
type process interface {
	Pid() int
	Signal(sig os.Signal) error
	// Done is closed when the child has exited; ExitCode is valid then.
	Done() <-chan struct{}
	ExitCode() int
}

// liveness is what a probe learned from the child's /livez.
type liveness struct {
	PID       int
	Running   int
	Paused    bool
	Heartbeat time.Time
}

// Guard runs and restarts one child. Build it with New, then Run.
type Guard struct {
	cfg     Config
	log     *slog.Logger
	reload  chan struct{}
	signals chan os.Signal
	// reaper is nil unless the guard inherits orphans (PID 1, subreaper).
	reaper *reaper
	// start and probe are the child and its /livez; tests replace them.
	start func() (process, error)
	probe func(ctx context.Context, pid int) (liveness, error)
}

// New checks cfg and builds a guard; nothing runs until Run.
func New(cfg Config) (*Guard, error) {
	if cfg.Path == "" || cfg.LivezURL == "" {
		return nil, gh.Errorf(gh.CodeInvalid, "guard: Path and LivezURL are required")
	}
	cfg = cfg.withDefaults()
	g := &Guard{cfg: cfg, log: cfg.Logger, reload: make(chan struct{}, 1), signals: make(chan os.Signal, 4),
		reaper: newReaper(cfg.Logger)}
	g.start = g.startChild
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	g.probe = func(ctx context.Context, pid int) (liveness, error) {
		return probeLivez(ctx, client, cfg.LivezURL, pid)
	}
	return g, nil
}

// Reload asks for a reload: pause the child's claims, wait for its
// running turns (at most ReloadMaxWait), stop it and start a new one.
// It returns at once; a reload already asked for absorbs this one.
func (g *Guard) Reload() {
	select {
	case g.reload <- struct{}{}:
	default:
	}
}

// Signal forwards sig (SIGTERM, SIGINT) to the child and makes Run end
// once the child has exited. A second one is forwarded too (the gateway
// then stops without finishing its drain).
func (g *Guard) Signal(sig os.Signal) {
	select {
	case g.signals <- sig:
	default:
	}
}

// ending is why watching a child ended.
type ending struct {
	why    endReason
	code   int    // the child's exit status (endStopped, endExited)
	reason string // for the log
}

type endReason int

const (
	endStopped      endReason = iota // the guard was told to stop; the child is gone
	endExited                        // the child exited by itself
	endUnresponsive                  // /livez failed Failures times; the child was killed
	endReloaded                      // a reload stopped the child
)

// Run starts the child and keeps it running until ctx ends or a signal
// comes (Signal): then the child is stopped (SIGTERM, its drain) and Run
// returns its exit status. A child that exits with status 2 (its
// configuration refused) is not restarted: Run returns 2 and an error.
func (g *Guard) Run(ctx context.Context) (int, error) {
	if g.cfg.PIDFile != "" {
		if err := writePIDFile(g.cfg.PIDFile); err != nil {
			return 1, err
		}
		defer os.Remove(g.cfg.PIDFile)
	}
	if g.reaper != nil {
		g.log.Info("guard: reaping orphaned processes (PID 1 or a child subreaper)")
		rctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { g.reaper.run(rctx); close(done) }()
		defer func() { stop(); <-done }()
	}
	backoff := g.cfg.Backoff
	for {
		c, err := g.start()
		if err != nil {
			return 1, gh.Wrap(gh.CodeInternal, err, "guard: start %s", g.cfg.Path)
		}
		started := time.Now()
		g.log.Info("guard: child started", "pid", c.Pid())
		end := g.watch(ctx, c)
		switch end.why {
		case endStopped:
			g.log.Info("guard: child stopped", "pid", c.Pid(), "status", end.code)
			return end.code, nil
		case endReloaded:
			g.log.Info("guard: reload: starting a new child", "old_pid", c.Pid())
			backoff = g.cfg.Backoff
			continue
		}
		if end.why == endExited && end.code == 2 {
			return 2, gh.Errorf(gh.CodeInvalid, "guard: the child refused its configuration (exit status 2); not restarting")
		}
		if time.Since(started) > g.cfg.MaxBackoff {
			backoff = g.cfg.Backoff
		}
		g.log.Warn("guard: restarting the child", "pid", c.Pid(), "reason", end.reason, "in", backoff)
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-g.reload:
			t.Stop()
		case sig := <-g.signals:
			t.Stop()
			g.log.Info("guard: stopping while no child runs", "signal", sig.String())
			return 0, nil
		case <-ctx.Done():
			t.Stop()
			return 0, nil
		}
		backoff = min(backoff*2, g.cfg.MaxBackoff)
	}
}

// probeResult is one probe's outcome, handed back to watch.
type probeResult struct {
	l   liveness
	err error
}

// reloading is a reload in progress.
type reloading struct {
	deadline   time.Time
	pauseSent  bool
	pausedSeen time.Time // when a probe first saw the claims paused
}

// watch probes c until it exits, stops answering, a reload replaces it
// or the guard is told to stop.
func (g *Guard) watch(ctx context.Context, c process) ending {
	pctx, cancel := context.WithCancel(ctx)
	defer cancel()
	tick := time.NewTicker(g.cfg.Interval)
	defer tick.Stop()
	results := make(chan probeResult, 1)
	probing := false
	probe := func() {
		if probing {
			return
		}
		probing = true
		go func() {
			ctx, cancel := context.WithTimeout(pctx, g.cfg.ProbeTimeout)
			defer cancel()
			l, err := g.probe(ctx, c.Pid())
			results <- probeResult{l, err}
		}()
	}
	// drainResult waits for a probe in flight before returning, so no
	// goroutine outlives watch.
	defer func() {
		if probing {
			cancel()
			<-results
		}
	}()
	started := time.Now()
	live := false
	failures := 0
	var rl *reloading
	var reloadTick <-chan time.Time
	for {
		select {
		case <-c.Done():
			code := c.ExitCode()
			return ending{why: endExited, code: code, reason: fmt.Sprintf("the child exited with status %d", code)}
		case sig := <-g.signals:
			return g.stop(c, sig)
		case <-ctx.Done():
			return g.stop(c, syscall.SIGTERM)
		case <-g.reload:
			if rl != nil {
				continue
			}
			g.log.Info("guard: reload: pausing the child's claims and waiting for its turns", "pid", c.Pid(), "max_wait", g.cfg.ReloadMaxWait)
			rl = &reloading{deadline: time.Now().Add(g.cfg.ReloadMaxWait)}
			t := time.NewTicker(min(g.cfg.Interval, 250*time.Millisecond))
			defer t.Stop()
			reloadTick = t.C
			if live {
				rl.pauseSent = c.Signal(syscall.SIGUSR1) == nil
			}
			probe()
		case <-reloadTick:
			if time.Now().After(rl.deadline) {
				g.log.Warn("guard: reload: turns still running after the longest wait; stopping the child anyway (its drain hands them back)", "pid", c.Pid())
				return g.replace(c)
			}
			probe()
		case <-tick.C:
			probe()
		case r := <-results:
			probing = false
			if r.err != nil {
				if !live && time.Since(started) < g.cfg.StartGrace {
					g.log.Debug("guard: child not answering yet", "pid", c.Pid(), "err", r.err)
					continue // still starting
				}
				failures++
				g.log.Warn("guard: liveness probe failed", "pid", c.Pid(), "failures", failures, "of", g.cfg.Failures, "err", r.err)
				if failures >= g.cfg.Failures {
					return g.kill(c, fmt.Sprintf("/livez failed %d probes in a row: %v", failures, r.err))
				}
				continue
			}
			if !live {
				g.log.Info("guard: child is live", "pid", c.Pid())
			} else if failures > 0 {
				g.log.Info("guard: liveness probe answers again", "pid", c.Pid())
			}
			live, failures = true, 0
			if rl == nil {
				continue
			}
			if !rl.pauseSent {
				rl.pauseSent = c.Signal(syscall.SIGUSR1) == nil
				continue
			}
			if !r.l.Paused {
				continue
			}
			if rl.pausedSeen.IsZero() {
				rl.pausedSeen = time.Now()
				continue
			}
			// A heartbeat after the pause was seen: the claim loop has
			// gone round since, so no claim was still in flight.
			if r.l.Running == 0 && r.l.Heartbeat.After(rl.pausedSeen) {
				g.log.Info("guard: reload: no turn running; stopping the child", "pid", c.Pid())
				return g.replace(c)
			}
		}
	}
}

// stop forwards sig to the child and waits for it to exit, forwarding
// further signals; after StopTimeout it is killed.
func (g *Guard) stop(c process, sig os.Signal) ending {
	g.log.Info("guard: stopping the child", "pid", c.Pid(), "signal", sig.String())
	_ = c.Signal(sig)
	t := time.NewTimer(g.cfg.StopTimeout)
	defer t.Stop()
	for {
		select {
		case <-c.Done():
			return ending{why: endStopped, code: c.ExitCode()}
		case sig := <-g.signals:
			g.log.Info("guard: forwarding a second signal", "pid", c.Pid(), "signal", sig.String())
			_ = c.Signal(sig)
		case <-t.C:
			g.log.Warn("guard: the child did not stop in time; killing it", "pid", c.Pid(), "timeout", g.cfg.StopTimeout)
			_ = c.Signal(syscall.SIGKILL)
			<-c.Done()
			return ending{why: endStopped, code: c.ExitCode()}
		}
	}
}

// replace stops the child for a reload (SIGTERM, its drain). A stop
// signal meanwhile is forwarded, and the guard then stops too.
func (g *Guard) replace(c process) ending {
	_ = c.Signal(syscall.SIGTERM)
	t := time.NewTimer(g.cfg.StopTimeout)
	defer t.Stop()
	select {
	case <-c.Done():
		return ending{why: endReloaded, code: c.ExitCode()}
	case sig := <-g.signals:
		return g.stop(c, sig)
	case <-t.C:
		g.log.Warn("guard: reload: the child did not stop in time; killing it", "pid", c.Pid())
		_ = c.Signal(syscall.SIGKILL)
		<-c.Done()
		return ending{why: endReloaded, code: c.ExitCode()}
	}
}

// kill ends a child that stopped answering: SIGKILL works on a stopped
// or wedged process, and its successor may bind the same address.
func (g *Guard) kill(c process, reason string) ending {
	g.log.Error("guard: the child stopped answering; killing it", "pid", c.Pid(), "reason", reason)
	_ = c.Signal(syscall.SIGKILL)
	<-c.Done()
	return ending{why: endUnresponsive, code: c.ExitCode(), reason: reason}
}

// probeLivez asks url and wants 200 from the process pid.
func probeLivez(ctx context.Context, client *http.Client, url string, pid int) (liveness, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return liveness{}, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return liveness{}, err
	}
	defer resp.Body.Close()
	var body struct {
		PID     int    `json:"pid"`
		Message string `json:"message"`
		Running int    `json:"running"`
		Paused  bool   `json:"paused"`
		Loops   []struct {
			Name      string    `json:"name"`
			Heartbeat time.Time `json:"heartbeat"`
		} `json:"loops"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 64<<10)).Decode(&body); err != nil {
		return liveness{}, fmt.Errorf("%s: %d, unreadable body: %w", url, resp.StatusCode, err)
	}
	if resp.StatusCode != http.StatusOK {
		return liveness{}, fmt.Errorf("%s: %d: %s", url, resp.StatusCode, body.Message)
	}
	if body.PID != 0 && body.PID != pid {
		return liveness{}, fmt.Errorf("%s is answered by process %d, not the child %d", url, body.PID, pid)
	}
	l := liveness{PID: body.PID, Running: body.Running, Paused: body.Paused}
	for _, lp := range body.Loops {
		if lp.Name == "workers" {
			l.Heartbeat = lp.Heartbeat
		}
	}
	return l, nil
}

// osProcess is a real child.
type osProcess struct {
	cmd  *exec.Cmd
	done chan struct{}
}

func (p *osProcess) Pid() int                   { return p.cmd.Process.Pid }
func (p *osProcess) Signal(sig os.Signal) error { return p.cmd.Process.Signal(sig) }
func (p *osProcess) Done() <-chan struct{}      { return p.done }

// ExitCode is the status, or 128+n for a child ended by signal n (as
// shells report it); -1 when Wait failed and the status is unknown.
func (p *osProcess) ExitCode() int {
	st := p.cmd.ProcessState
	if st == nil {
		return -1
	}
	if ws, ok := st.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return st.ExitCode()
}

func (g *Guard) startChild() (process, error) {
	cmd := exec.Command(g.cfg.Path, g.cfg.Args...)
	cmd.Env, cmd.Stdout, cmd.Stderr = g.cfg.Env, g.cfg.Stdout, g.cfg.Stderr
	cmd.SysProcAttr = childAttr()
	if err := g.reaper.start(cmd); err != nil {
		return nil, err
	}
	p := &osProcess{cmd: cmd, done: make(chan struct{})}
	go func() {
		if err := cmd.Wait(); cmd.ProcessState == nil {
			g.log.Error("guard: waiting for the child failed; its status is unknown", "pid", cmd.Process.Pid, "err", err)
		}
		g.reaper.waited(cmd.Process.Pid)
		close(p.done)
	}()
	return p, nil
}
