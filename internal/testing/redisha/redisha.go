package redisha

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	goredis "github.com/redis/go-redis/v9"

	"github.com/gatehouse/gatehouse/internal/testing/testenv"
)

// Options tune the Sentinels. The zero value is a working set.
type Options struct {
	// MasterName is the name the Sentinels monitor the master by (the
	// URL's master_name). Defaults to "gatehouse".
	MasterName string
	// SentinelPassword, when set, is every Sentinel's requirepass (the
	// Sentinels use it with each other too) and goes in the URL's
	// userinfo. The data servers have no password. Defaults to empty: no
	// Sentinel auth.
	SentinelPassword string
	// DownAfter is down-after-milliseconds: how long a master may not
	// answer before a Sentinel thinks it down. Defaults to 1s (Redis's
	// default is 30s, far beyond a test's patience).
	DownAfter time.Duration
	// FailoverTimeout is failover-timeout: how long a failover may take
	// before another Sentinel retries it. Defaults to 4s.
	FailoverTimeout time.Duration
}

func (o Options) withDefaults() Options {
	if o.MasterName == "" {
		o.MasterName = "gatehouse"
	}
	if o.DownAfter <= 0 {
		o.DownAfter = time.Second
	}
	if o.FailoverTimeout <= 0 {
		o.FailoverTimeout = 4 * time.Second
	}
	return o
}

// HA is a running master, replica and three Sentinels.
type HA struct {
	opts Options
	prog string
	dir  string

	mu        sync.Mutex
	servers   map[string]*proc // data servers by address; the killed ones stay, dead
	sentinels []*proc
	all       []*proc // every process started, for the cleanup
	killedAt  time.Time
}

// proc is one redis-server process.
type proc struct {
	addr string
	log  string
	cmd  *exec.Cmd
	done chan struct{}
}

func (p *proc) kill() {
	_ = p.cmd.Process.Kill()
	<-p.done
}

func (p *proc) alive() bool {
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// quorum is how many Sentinels must agree the master is down.
const quorum = 2

// Start runs a master, a replica of it and three Sentinels monitoring it,
// and returns once every Sentinel knows the replica and the other two
// Sentinels, so a failover can happen from the first moment. Everything
// is killed when t ends.
func Start(t testing.TB, opts Options) *HA {
	t.Helper()
	prog, err := exec.LookPath("redis-server")
	if err != nil {
		if testenv.RequireServices() {
			t.Fatalf("redis-server is required (GATEHOUSE_TEST_REQUIRE_SERVICES=1) but not on PATH: %v", err)
		}
		t.Skip("Redis Sentinel tests skipped: install redis-server (apt-get install redis-server) to run them")
	}
	h := &HA{opts: opts.withDefaults(), prog: prog, dir: t.TempDir(), servers: map[string]*proc{}}
	t.Cleanup(func() { h.stop(t) })

	master := h.spawn(t, "master", h.serverArgs("master")...)
	h.waitServer(t, master.addr, "the master answering", func(c *goredis.Client, ctx context.Context) bool {
		return c.Ping(ctx).Err() == nil
	})
	_, port, _ := net.SplitHostPort(master.addr)
	replica := h.spawn(t, "replica", append(h.serverArgs("replica"), "--replicaof", "127.0.0.1", port)...)
	h.waitServer(t, replica.addr, "the replica in sync with the master", func(c *goredis.Client, ctx context.Context) bool {
		info, err := c.Info(ctx, "replication").Result()
		return err == nil && strings.Contains(info, "master_link_status:up")
	})
	h.servers[master.addr], h.servers[replica.addr] = master, replica

	for i := range 3 {
		h.sentinels = append(h.sentinels, h.spawnSentinel(t, i, master.addr))
	}
	for _, s := range h.sentinels {
		c := h.sentinelClient(s.addr)
		testenv.Eventually(t, "Sentinel "+s.addr+" knowing the replica and the other Sentinels", func() bool {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			rs, err := c.Replicas(ctx, h.opts.MasterName).Result()
			if err != nil || len(rs) != 1 || rs[0]["flags"] != "slave" || rs[0]["master-link-status"] != "ok" {
				return false
			}
			ss, err := c.Sentinels(ctx, h.opts.MasterName).Result()
			return err == nil && len(ss) == len(h.sentinels)-1
		})
		c.Close()
	}
	return h
}

// URL is the go-redis failover URL of the Sentinels, for
// GATEHOUSE_REDIS_URL: redis://[:password@]sentinel1/0?master_name=…&addr=sentinel2&addr=sentinel3.
func (h *HA) URL() string {
	u := url.URL{Scheme: "redis", Host: h.sentinels[0].addr, Path: "/0"}
	if h.opts.SentinelPassword != "" {
		u.User = url.UserPassword("", h.opts.SentinelPassword)
	}
	q := "master_name=" + url.QueryEscape(h.opts.MasterName)
	for _, s := range h.sentinels[1:] {
		q += "&addr=" + s.addr
	}
	u.RawQuery = q
	return u.String()
}

// SentinelAddrs are the Sentinels' addresses.
func (h *HA) SentinelAddrs() []string {
	var out []string
	for _, s := range h.sentinels {
		out = append(out, s.addr)
	}
	return out
}

// MasterAddr asks the Sentinels, in turn until one answers, which server
// is the master (SENTINEL get-master-addr-by-name).
func (h *HA) MasterAddr(ctx context.Context) (string, error) {
	var errs []string
	for _, s := range h.sentinels {
		addr, err := h.askSentinel(ctx, s.addr)
		if err == nil {
			return addr, nil
		}
		errs = append(errs, err.Error())
	}
	return "", fmt.Errorf("no Sentinel named the master of %q: %s", h.opts.MasterName, strings.Join(errs, "; "))
}

func (h *HA) askSentinel(ctx context.Context, addr string) (string, error) {
	c := h.sentinelClient(addr)
	defer c.Close()
	hp, err := c.GetMasterAddrByName(ctx, h.opts.MasterName).Result()
	if err != nil {
		return "", fmt.Errorf("sentinel %s: %w", addr, err)
	}
	if len(hp) != 2 {
		return "", fmt.Errorf("sentinel %s: get-master-addr-by-name answered %v", addr, hp)
	}
	return net.JoinHostPort(hp[0], hp[1]), nil
}

// KillMaster kills the current master with SIGKILL, as a crash would (it
// is not restarted), and returns its address. WaitNewMaster's time counts
// from here.
func (h *HA) KillMaster(t testing.TB) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	addr, err := h.MasterAddr(ctx)
	if err != nil {
		t.Fatalf("kill master: %v", err)
	}
	h.mu.Lock()
	p := h.servers[addr]
	h.mu.Unlock()
	if p == nil || !p.alive() {
		t.Fatalf("kill master: the Sentinels name %s, which is not a live server of this set", addr)
	}
	p.kill()
	h.mu.Lock()
	h.killedAt = time.Now()
	h.mu.Unlock()
	return addr
}

// WaitNewMaster waits until every Sentinel names the same master, other
// than old, and that server answers ROLE as a master: a client asking any
// Sentinel now reaches a master that takes writes. took is the time since
// the last KillMaster (since the call when there was none). The test fails
// after timeout.
func (h *HA) WaitNewMaster(t testing.TB, old string, timeout time.Duration) (addr string, took time.Duration) {
	t.Helper()
	h.mu.Lock()
	from := h.killedAt
	h.mu.Unlock()
	if from.IsZero() {
		from = time.Now()
	}
	deadline := time.Now().Add(timeout)
	last := "nothing asked yet"
	for {
		a, why := h.agreedMaster(old)
		if why == "" {
			return a, time.Since(from)
		}
		last = why
		if time.Now().After(deadline) {
			t.Fatalf("no new master within %s of %s's death: %s", timeout, old, last)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// agreedMaster returns the master every Sentinel names, when they agree
// on one other than old and it is a master; else why not.
func (h *HA) agreedMaster(old string) (string, string) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	agreed := ""
	for _, s := range h.sentinels {
		a, err := h.askSentinel(ctx, s.addr)
		switch {
		case err != nil:
			return "", err.Error()
		case a == old:
			return "", "sentinel " + s.addr + " still names " + old
		case agreed != "" && a != agreed:
			return "", "the Sentinels name " + agreed + " and " + a
		}
		agreed = a
	}
	c := goredis.NewClient(&goredis.Options{Addr: agreed, MaxRetries: -1})
	defer c.Close()
	role, err := c.Do(ctx, "ROLE").Slice()
	if err != nil || len(role) == 0 || role[0] != "master" {
		return "", fmt.Sprintf("%s answers ROLE %v %v", agreed, role, err)
	}
	return agreed, ""
}

func (h *HA) sentinelClient(addr string) *goredis.SentinelClient {
	return goredis.NewSentinelClient(&goredis.Options{Addr: addr, Password: h.opts.SentinelPassword, MaxRetries: -1, DialTimeout: time.Second})
}

// serverArgs are a data server's flags: nothing on disk, loopback only.
func (h *HA) serverArgs(name string) []string {
	dir := filepath.Join(h.dir, name)
	return []string{"--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", dir, "--logfile", filepath.Join(dir, "redis.log")}
}

// spawnSentinel writes Sentinel i's config (Sentinel rewrites it, so it
// is a file of its own in its own directory) and starts it.
func (h *HA) spawnSentinel(t testing.TB, i int, master string) *proc {
	t.Helper()
	name := fmt.Sprintf("sentinel%d", i)
	dir := filepath.Join(h.dir, name)
	host, port, _ := net.SplitHostPort(master)
	conf := []string{
		"bind 127.0.0.1",
		"dir " + dir,
		"logfile " + filepath.Join(dir, "redis.log"),
		fmt.Sprintf("sentinel monitor %s %s %s %d", h.opts.MasterName, host, port, quorum),
		fmt.Sprintf("sentinel down-after-milliseconds %s %d", h.opts.MasterName, h.opts.DownAfter.Milliseconds()),
		fmt.Sprintf("sentinel failover-timeout %s %d", h.opts.MasterName, h.opts.FailoverTimeout.Milliseconds()),
		fmt.Sprintf("sentinel parallel-syncs %s 1", h.opts.MasterName),
	}
	if h.opts.SentinelPassword != "" {
		conf = append(conf, "requirepass "+h.opts.SentinelPassword)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "sentinel.conf")
	if err := os.WriteFile(path, []byte(strings.Join(conf, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p := h.spawn(t, name, path, "--sentinel")
	c := h.sentinelClient(p.addr)
	defer c.Close()
	testenv.Eventually(t, "Sentinel "+p.addr+" answering", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return c.Ping(ctx).Err() == nil
	})
	return p
}

// spawn starts redis-server with args and a free loopback port of its own
// (--port comes last, so it wins over a config file's).
func (h *HA) spawn(t testing.TB, name string, args ...string) *proc {
	t.Helper()
	dir := filepath.Join(h.dir, name)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	addr := freeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	cmd := exec.Command(h.prog, append(args, "--port", port)...)
	if err := cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	p := &proc{addr: addr, log: filepath.Join(dir, "redis.log"), cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(p.done) }()
	h.mu.Lock()
	h.all = append(h.all, p)
	h.mu.Unlock()
	return p
}

func (h *HA) waitServer(t testing.TB, addr, what string, ok func(*goredis.Client, context.Context) bool) {
	t.Helper()
	c := goredis.NewClient(&goredis.Options{Addr: addr, MaxRetries: -1, DialTimeout: time.Second})
	defer c.Close()
	testenv.Eventually(t, what, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		return ok(c, ctx)
	})
}

// stop kills every process; when the test failed, it logs the end of each
// one's log, which is where a failover that did not happen says why.
func (h *HA) stop(t testing.TB) {
	h.mu.Lock()
	procs := h.all
	h.mu.Unlock()
	for _, p := range procs {
		if p.alive() {
			p.kill()
		}
	}
	if !t.Failed() {
		return
	}
	for _, p := range procs {
		b, _ := os.ReadFile(p.log)
		lines := strings.Split(strings.TrimSpace(string(b)), "\n")
		t.Logf("%s (%s), last lines:\n%s", p.addr, p.log, strings.Join(lines[max(len(lines)-30, 0):], "\n"))
	}
}

func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
