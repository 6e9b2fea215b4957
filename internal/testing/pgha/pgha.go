package pgha

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/gatehouse/gatehouse/internal/testing/testenv"
)

// Node is one Postgres node of the formation.
type Node struct {
	Name string
	Port string
	dir  string
	cmd  *exec.Cmd
	done chan struct{}
}

// Formation is a running monitor and two nodes.
type Formation struct {
	bin, dir    string
	owner       *user.User
	monitorPort string
	monitor     *Node
	Nodes       []*Node
	killedAt    time.Time
}

// Start runs the formation and returns once one node is primary and the
// other a synchronous secondary. It skips the test when pg_autoctl or the
// Postgres server is missing, unless services are required.
func Start(t testing.TB) *Formation {
	t.Helper()
	if _, err := exec.LookPath("pg_autoctl"); err != nil {
		need(t, "pg_autoctl (packages pg-auto-failover-cli and postgresql-<major>-auto-failover)")
	}
	bins, _ := filepath.Glob("/usr/lib/postgresql/*/bin/pg_ctl")
	sort.Strings(bins)
	if len(bins) == 0 {
		need(t, "the Postgres server (pg_ctl)")
	}
	f := &Formation{bin: filepath.Dir(bins[len(bins)-1])}
	dir, err := os.MkdirTemp("", "gatehouse-pgha-")
	if err != nil {
		t.Fatal(err)
	}
	f.dir = dir
	if os.Geteuid() == 0 {
		u, err := user.Lookup("postgres")
		if err != nil {
			need(t, "the postgres user (Postgres refuses root)")
		}
		f.owner = u
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		if err := os.Chown(dir, uid, gid); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, n := range append([]*Node{f.monitor}, f.Nodes...) {
			if n != nil {
				n.kill()
			}
		}
		if t.Failed() {
			for _, name := range []string{"monitor", "n1", "n2"} {
				if b, err := os.ReadFile(filepath.Join(dir, name+".log")); err == nil {
					t.Logf("pg_autoctl %s log (end):\n%s", name, tail(string(b), 3000))
				}
			}
		}
		os.RemoveAll(dir)
	})

	f.monitorPort = freePort(t)
	f.monitor = f.run(t, "monitor", f.monitorPort, "create", "monitor", "--pgdata", filepath.Join(dir, "monitor"),
		"--pgport", f.monitorPort, "--hostname", "127.0.0.1", "--listen", "127.0.0.1", "--auth", "trust", "--no-ssl", "--run")
	ctx := context.Background()
	testenv.EventuallyWithin(t, 2*time.Minute, "the pg_auto_failover monitor answering", func() bool {
		return f.monitorExec(ctx, "select 1") == nil
	})
	// The monitor's defaults take 20-30 s to call a node dead; a test
	// wants seconds. These are the settings an operator tunes too.
	for _, set := range []string{
		"pgautofailover.health_check_period = 1000", "pgautofailover.health_check_timeout = 1000",
		"pgautofailover.health_check_max_retries = 1", "pgautofailover.health_check_retry_delay = 500",
		"pgautofailover.node_considered_unhealthy_timeout = 3000", "pgautofailover.startup_grace_period = 5000",
		// How long the monitor waits for a lost primary to notice it was
		// demoted before promoting the standby (default 30s). The old
		// primary's keeper is dead here; in production keep it above the
		// keeper's network_partition_timeout.
		"pgautofailover.primary_demote_timeout = 2000",
	} {
		if err := f.monitorExec(ctx, "alter system set "+set); err != nil {
			t.Fatalf("monitor: %s: %v", set, err)
		}
	}
	if err := f.monitorExec(ctx, "select pg_reload_conf()"); err != nil {
		t.Fatal(err)
	}
	testenv.EventuallyWithin(t, 30*time.Second, "the monitor's tuned timeouts in force", func() bool {
		var v string
		return query1(ctx, "postgres://postgres@127.0.0.1:"+f.monitorPort+"/pg_auto_failover?sslmode=disable", "show pgautofailover.primary_demote_timeout", &v) == nil && (v == "2000" || v == "2s")
	})
	monitorURL := "postgres://autoctl_node@127.0.0.1:" + f.monitorPort + "/pg_auto_failover?sslmode=disable"
	for i := 1; i <= 2; i++ {
		name := "n" + strconv.Itoa(i)
		port := freePort(t)
		n := f.run(t, name, port, "create", "postgres", "--pgdata", filepath.Join(dir, name), "--pgport", port,
			"--hostname", "127.0.0.1", "--listen", "127.0.0.1", "--name", name, "--monitor", monitorURL,
			"--auth", "trust", "--no-ssl", "--dbname", "gatehouse", "--run")
		f.Nodes = append(f.Nodes, n)
		if i == 1 {
			testenv.EventuallyWithin(t, 2*time.Minute, "node n1 primary", func() bool {
				s, _ := f.states(ctx)
				return s["n1"] == "single" || s["n1"] == "wait_primary" || s["n1"] == "primary"
			})
		}
	}
	// The standby's base backup waits for a checkpoint, which Postgres
	// spreads over minutes unless asked: ask.
	testenv.EventuallyWithin(t, 3*time.Minute, "n1 primary and n2 its synchronous secondary", func() bool {
		_ = exec1(ctx, f.Nodes[0].url("postgres"), "checkpoint")
		s, _ := f.states(ctx)
		if s["n1"] == "primary" && s["n2"] == "secondary" {
			return true
		}
		time.Sleep(time.Second)
		return false
	})
	var sync string
	if err := query1(ctx, f.Nodes[0].url("postgres"), "show synchronous_standby_names", &sync); err != nil || sync == "" {
		t.Fatalf("replication is not synchronous: synchronous_standby_names=%q %v", sync, err)
	}
	return f
}

// URL is a multi-host URL for database db, as an operator writes it for
// a managed HA Postgres: pgx tries the hosts in turn and keeps the one
// that takes writes.
func (f *Formation) URL(db string) string {
	var hosts []string
	for _, n := range f.Nodes {
		hosts = append(hosts, "127.0.0.1:"+n.Port)
	}
	return "postgres://postgres@" + strings.Join(hosts, ",") + "/" + db + "?sslmode=disable&target_session_attrs=read-write"
}

// Primary is the node the monitor reports as primary (or wait_primary:
// a primary whose standby is away, writes on).
func (f *Formation) Primary(ctx context.Context) (*Node, error) {
	s, err := f.states(ctx)
	if err != nil {
		return nil, err
	}
	for _, n := range f.Nodes {
		if st := s[n.Name]; st == "primary" || st == "wait_primary" || st == "single" {
			return n, nil
		}
	}
	return nil, fmt.Errorf("no primary: %v", s)
}

// KillPrimary ends the primary as a crash would: kill -9 of its keeper
// (which would otherwise restart Postgres in place) and of its
// postmaster and backends. It returns the node and when.
func (f *Formation) KillPrimary(t testing.TB) (*Node, time.Time) {
	t.Helper()
	p, err := f.Primary(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	f.killedAt = time.Now()
	p.kill()
	return p, f.killedAt
}

// WaitNewPrimary waits until the monitor reports a primary other than
// old and returns it with the time from the kill.
func (f *Formation) WaitNewPrimary(t testing.TB, old *Node, within time.Duration) (*Node, time.Duration) {
	t.Helper()
	var got *Node
	testenv.EventuallyWithin(t, within, "the monitor promoting the standby", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		n, err := f.Primary(ctx)
		if err == nil && n != old {
			got = n
			return true
		}
		time.Sleep(50 * time.Millisecond)
		return false
	})
	return got, time.Since(f.killedAt)
}

// states maps node names to the state each reported to the monitor and
// was assigned ("a->b" while the two differ).
func (f *Formation) states(ctx context.Context) (map[string]string, error) {
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, "postgres://autoctl_node@127.0.0.1:"+f.monitorPort+"/pg_auto_failover?sslmode=disable")
	if err != nil {
		return nil, err
	}
	defer c.Close(context.Background())
	// A dead node's reported state is the last it reported (a killed
	// primary stays "primary"): a node counts in a state only once the
	// monitor assigned it too.
	rows, err := c.Query(ctx, "select nodename, case when reportedstate = goalstate then reportedstate::text else reportedstate::text || '->' || goalstate::text end from pgautofailover.node")
	if err != nil {
		return nil, err
	}
	out := map[string]string{}
	for rows.Next() {
		var n, s string
		if err := rows.Scan(&n, &s); err != nil {
			return nil, err
		}
		out[n] = s
	}
	return out, rows.Err()
}

func (f *Formation) monitorExec(ctx context.Context, sql string) error {
	return exec1(ctx, "postgres://postgres@127.0.0.1:"+f.monitorPort+"/pg_auto_failover?sslmode=disable", sql)
}

// run starts pg_autoctl in its own process group, as the postgres user,
// logging to DIR/name.log.
func (f *Formation) run(t testing.TB, name, port string, args ...string) *Node {
	t.Helper()
	logf, err := os.Create(filepath.Join(f.dir, name+".log"))
	if err != nil {
		t.Fatal(err)
	}
	env := []string{"PATH=" + f.bin + ":/usr/bin:/bin", "XDG_CONFIG_HOME=" + filepath.Join(f.dir, "config"),
		"XDG_DATA_HOME=" + filepath.Join(f.dir, "share")}
	cmd := exec.Command("pg_autoctl", args...)
	if f.owner != nil {
		cmd = exec.Command("runuser", append([]string{"-u", "postgres", "--", "env"}, append(env, append([]string{"pg_autoctl"}, args...)...)...)...)
	}
	// Only what pg_autoctl needs: the test's own environment (tokens,
	// URLs) is none of its business.
	cmd.Env = env
	cmd.Dir = f.dir
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatalf("pg_autoctl %s: %v", name, err)
	}
	n := &Node{Name: name, Port: port, dir: filepath.Join(f.dir, name), cmd: cmd, done: make(chan struct{})}
	go func() { cmd.Wait(); logf.Close(); close(n.done) }()
	return n
}

func (n *Node) url(db string) string {
	return "postgres://postgres@127.0.0.1:" + n.Port + "/" + db + "?sslmode=disable"
}

// kill sends SIGKILL to the node's keeper's process group, then to its
// postmaster and the postmaster's children (backends): nothing of the
// node survives to answer or to be restarted by its keeper.
func (n *Node) kill() {
	if n.cmd == nil || n.cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-n.cmd.Process.Pid, syscall.SIGKILL)
	if b, err := os.ReadFile(filepath.Join(n.dir, "postmaster.pid")); err == nil {
		if pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(string(b), "\n", 2)[0])); err == nil && pid > 0 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			killChildren(pid)
		}
	}
	select {
	case <-n.done:
	case <-time.After(10 * time.Second):
	}
}

// killChildren SIGKILLs every process whose parent is pid.
func killChildren(pid int) {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		child, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid …: comm may hold spaces, so read after ')'.
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(s[i+1:])
		if len(f) > 1 && f[1] == strconv.Itoa(pid) {
			_ = syscall.Kill(child, syscall.SIGKILL)
		}
	}
}

func exec1(ctx context.Context, url, sql string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	_, err = c.Exec(ctx, sql)
	return err
}

func query1(ctx context.Context, url, sql string, out any) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer c.Close(context.Background())
	return c.QueryRow(ctx, sql).Scan(out)
}

func freePort(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port
}

func need(t testing.TB, what string) {
	t.Helper()
	if testenv.RequireServices() {
		t.Fatalf("%s is required (GATEHOUSE_TEST_REQUIRE_SERVICES=1) but not installed", what)
	}
	t.Skipf("%s not installed: test skipped", what)
}

func tail(s string, n int) string {
	if len(s) > n {
		return "…" + s[len(s)-n:]
	}
	return s
}
