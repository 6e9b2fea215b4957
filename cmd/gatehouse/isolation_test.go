package main

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/internal/testing/smtptest"
	"github.com/gatehouse/gatehouse/internal/testing/testenv"
	"github.com/gatehouse/gatehouse/models/modeltest"
)

// nobody is the unprivileged user the gateway runs as in these tests.
const nobody = 65534

// snoopReport is what testdata/snoop found (see its Report).
type snoopReport struct {
	Pids, Environs, Cmdlines int
	Found                    []int
	GatewayEnviron, DataDir  string
	Credentials              int
	Decisions                []string
	Reached                  bool
}

// isoStack is a gateway with known random secrets in its environment, a
// pending email gate in session s1, and the snoop program where the test
// runs it: as a stdio MCP server ("mcp") or from shell_exec ("shell").
type isoStack struct {
	t       *testing.T
	p       *proc
	token   string
	secrets []string // API token, model key, SMTP password
	smtp    *smtptest.Server
	fake    *modeltest.OpenAI
	dataDir string
	snoop   string
	gate    gh.Gate
	asUser  bool
}

func randomSecret(t *testing.T, prefix string) string {
	b := make([]byte, 12)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return prefix + hex.EncodeToString(b)
}

// openDir makes a directory every user can enter and read: the binary, the
// fixtures and the data directory's parent must be reachable by nobody.
func openDir(t *testing.T) string {
	dir, err := os.MkdirTemp("", "gatehouse-isolation")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// needUnprivilegedSandbox skips unless nobody can make a sandbox here.
func needUnprivilegedSandbox(t *testing.T) {
	t.Helper()
	if os.Getuid() != 0 {
		t.Skip("running the gateway as another user needs the tests to run as root")
	}
	bwrap := testenv.Bubblewrap(t)
	cmd := exec.Command(bwrap, "--unshare-all", "--ro-bind", "/usr", "/usr", "--symlink", "usr/bin", "/bin",
		"--symlink", "usr/lib", "/lib", "--symlink", "usr/lib64", "/lib64", "--proc", "/proc", "--dev", "/dev", "/bin/true")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Skipf("unprivileged user namespaces are unavailable here (bwrap as uid %d: %v %s): the unprivileged case cannot run", nobody, err, out)
	}
}

func newIsoStack(t *testing.T, asUser bool, extra ...string) *isoStack {
	return newIsoStackWith(t, asUser, "sandbox", extra...)
}

// newIsoStackWith is newIsoStack with snoop's MCP "Isolation" set.
func newIsoStackWith(t *testing.T, asUser bool, isolation string, extra ...string) *isoStack {
	testenv.Bubblewrap(t)
	if asUser {
		needUnprivilegedSandbox(t)
	}
	s := &isoStack{t: t, asUser: asUser, smtp: smtptest.Start(t)}
	s.token = randomSecret(t, "gh-token-")
	key, smtpPwd := randomSecret(t, "sk-"), randomSecret(t, "pw")
	s.secrets = []string{s.token, key, smtpPwd}
	s.fake = modeltest.NewOpenAI(t, key)
	s.fake.Push(modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: "call_email", Name: "email_send",
		Arguments: `{"to":"Sara","subject":"Report","body":"The report is ready."}`}}})
	s.fake.SetDefault(modeltest.Reply{Text: "Done."})

	base := openDir(t)
	bin := binary(t)
	// binary() builds into a private temp dir: nobody must be able to run it.
	if err := os.Chmod(filepath.Dir(bin), 0o755); err != nil {
		t.Fatal(err)
	}
	s.snoop = filepath.Join(base, "snoop", "snoop")
	if out, err := exec.Command("go", "build", "-o", s.snoop, "./testdata/snoop").CombinedOutput(); err != nil {
		t.Fatalf("go build snoop: %v\n%s", err, out)
	}
	s.dataDir = filepath.Join(base, "data")
	if err := os.Mkdir(s.dataDir, 0o700); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(base, "mcp.json")
	raw, _ := json.Marshal(map[string]any{"servers": []map[string]any{{
		"Name": "snoop", "Command": []string{s.snoop}, "Network": true, "Isolation": isolation, "Tier": map[string]string{"snoop": "safe"},
	}}})
	if err := os.WriteFile(cfg, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "serve")
	if asUser {
		if err := os.Chown(s.dataDir, nobody, nobody); err != nil {
			t.Fatal(err)
		}
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	}
	smtpURL := strings.Replace(s.smtp.URL(), "smtp://", "smtp://agent:"+smtpPwd+"@", 1)
	s.p = launch(t, cmd, append([]string{
		"GATEHOUSE_DATA_DIR=" + s.dataDir, "HOME=" + base, "PATH=/usr/local/bin:/usr/bin:/bin",
		"GATEHOUSE_API_TOKEN=" + s.token,
		"GATEHOUSE_MODEL=openai:test-model", "OPENAI_API_KEY=" + key, "OPENAI_BASE_URL=" + s.fake.BaseURL(),
		"GATEHOUSE_SMTP_URL=" + smtpURL, "GATEHOUSE_EMAIL_FROM=agent@example.com",
		"GATEHOUSE_CONTACTS=Sara=sara@example.com", "GATEHOUSE_MODEL_RETRIES=1",
		"GATEHOUSE_MCP_CONFIG=" + cfg,
	}, extra...)...)

	if code, body := s.do("POST", "/v1/sessions/s1/input", map[string]string{"text": "Email Sara that the report is ready.", "requestId": "r1"}); code != 202 {
		t.Fatalf("input: %d %s", code, body)
	}
	waitUntil(t, "the email approval card", func() bool {
		g := s.gates("s1")
		if len(g) == 1 && g[0].State == gh.GatePending {
			s.gate = g[0]
			return true
		}
		return false
	})
	return s
}

// do is an API request with the gateway's token.
func (s *isoStack) do(method, path string, body any) (int, []byte) {
	s.t.Helper()
	return tokenClient{t: s.t, addr: s.p.addr, token: s.token}.do(method, path, body)
}

func (s *isoStack) gates(session string) []gh.Gate {
	_, raw := s.do("GET", "/v1/gates?session="+session, nil)
	var out struct{ Gates []gh.Gate }
	json.Unmarshal(raw, &out)
	return out.Gates
}

func (s *isoStack) events(session string) []gh.Event {
	_, raw := s.do("GET", "/v1/sessions/"+session+"/events?limit=1000", nil)
	var out struct{ Events []gh.Event }
	json.Unmarshal(raw, &out)
	return out.Events
}

// snoopArgs is what snoop gets: the secrets' hashes, not the secrets.
// Run outside a sandbox, it is told to look at the gateway's process only
// (hostOnly), not at the rest of the machine.
func (s *isoStack) snoopArgs(hostOnly ...bool) string {
	var hashes []string
	for _, sec := range s.secrets {
		sum := sha256.Sum256([]byte(sec))
		hashes = append(hashes, hex.EncodeToString(sum[:]))
	}
	args := map[string]any{"hashes": hashes, "gatewayPid": s.p.cmd.Process.Pid,
		"dataDir": s.dataDir, "api": "http://" + s.p.addr, "gate": s.gate.ID}
	if len(hostOnly) > 0 && hostOnly[0] {
		// On the host as the gateway's own user, snoop may read the data
		// directory: those are that user's files (the database, the
		// api-token file), as they are to any of its processes. What the
		// non-dumpable mark guards is the process itself: its environ.
		args["pids"] = []int{s.p.cmd.Process.Pid}
		args["dataDir"] = ""
	}
	raw, _ := json.Marshal(args)
	return string(raw)
}

// report waits for session's tool result and reads snoop's report in it.
func (s *isoStack) report(session string) snoopReport {
	s.t.Helper()
	var res gh.ToolResult
	waitUntil(s.t, "snoop's result", func() bool {
		for _, e := range s.events(session) {
			if e.Kind == gh.KindToolResult {
				json.Unmarshal(e.Payload, &res)
				return true
			}
		}
		return false
	})
	return parseReport(s.t, res.Content)
}

func parseReport(t *testing.T, content string) snoopReport {
	t.Helper()
	i, j := strings.Index(content, `{"pids"`), strings.LastIndex(content, "}")
	var r snoopReport
	if i < 0 || j < i || json.Unmarshal([]byte(content[i:j+1]), &r) != nil {
		t.Fatalf("no report from snoop in:\n%s", content)
	}
	return r
}

// check asserts snoop found nothing and decided nothing: the gate is still
// pending and no mail went out.
func (s *isoStack) check(r snoopReport, network bool) {
	t := s.t
	t.Helper()
	t.Logf("snoop: %+v", r)
	if r.Environs == 0 || r.Pids == 0 {
		t.Errorf("snoop read no /proc at all: %+v", r)
	}
	if len(r.Found) != 0 {
		t.Errorf("snoop found secrets %v (0 API token, 1 model key, 2 SMTP password)", r.Found)
	}
	if r.GatewayEnviron == "read" {
		t.Errorf("snoop read /proc/%d/environ", s.p.cmd.Process.Pid)
	}
	if !strings.Contains(r.DataDir, "no such file") && !strings.Contains(r.DataDir, "permission denied") {
		t.Errorf("snoop reached the data directory: %s", r.DataDir)
	}
	if network && !r.Reached {
		t.Errorf("snoop did not reach the API with the network on (the attempt is not tested): %v", r.Decisions)
	}
	for _, d := range r.Decisions {
		if strings.HasSuffix(d, ": 200") {
			t.Errorf("snoop decided the gate: %s", d)
		}
	}
	g := s.gates("s1")
	if len(g) != 1 || g[0].State != gh.GatePending {
		t.Errorf("the email gate is no longer pending: %+v", g)
	}
	if m := s.smtp.Mails(); len(m) != 0 {
		t.Errorf("mail went out: %+v", m)
	}
	for _, sec := range s.secrets {
		if strings.Contains(s.p.out.String(), sec) {
			t.Errorf("the gateway's output holds a secret")
		}
	}
}

func asWho(asUser bool) string {
	if asUser {
		return "as uid " + strconv.Itoa(nobody)
	}
	return "as root"
}

// A stdio MCP server (the test's snoop, with its network on) finds none of
// the gateway's secrets in /proc, the gateway's environ or the data
// directory, and cannot approve the pending gate with or without a token:
// with the gateway running as root and as an unprivileged user.
func TestIsolatedMCPServerFindsNoSecretAndDecidesNoGate(t *testing.T) {
	for _, asUser := range []bool{false, true} {
		t.Run(asWho(asUser), func(t *testing.T) {
			s := newIsoStack(t, asUser)
			s.fake.Push(modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: "call_snoop", Name: "snoop__snoop", Arguments: s.snoopArgs()}}})
			if code, body := s.do("POST", "/v1/sessions/s2/input", map[string]string{"text": "Look around.", "requestId": "r2"}); code != 202 {
				t.Fatalf("input: %d %s", code, body)
			}
			s.check(s.report("s2"), true)

			// /v1/info says how it runs, and so does the start log.
			var info struct {
				Isolation struct {
					Shell string
					MCP   []struct {
						Name, Isolation string
						Network         bool
					}
				}
			}
			_, raw := s.do("GET", "/v1/info", nil)
			json.Unmarshal(raw, &info)
			if m := info.Isolation.MCP; len(m) != 1 || m[0].Name != "snoop" || m[0].Isolation != "sandbox" || !m[0].Network {
				t.Errorf("/v1/info isolation = %s", raw)
			}
			if !strings.Contains(s.p.out.String(), "isolation=sandbox") {
				t.Errorf("the start log does not say the server is isolated:\n%s", s.p.out.String())
			}
		})
	}
}

// The same for an approved shell_exec command with the network on
// (GATEHOUSE_SHELL_NETWORK=on) that runs snoop from the workspace.
func TestIsolatedShellWithNetworkFindsNoSecretAndDecidesNoGate(t *testing.T) {
	for _, asUser := range []bool{false, true} {
		t.Run(asWho(asUser), func(t *testing.T) {
			s := newIsoStack(t, asUser, "GATEHOUSE_SHELL=on", "GATEHOUSE_SHELL_NETWORK=on")
			ws := filepath.Join(s.dataDir, "workspace")
			raw, err := os.ReadFile(s.snoop)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(ws, "snoop"), raw, 0o755); err != nil {
				t.Fatal(err)
			}
			if asUser {
				os.Chown(filepath.Join(ws, "snoop"), nobody, nobody)
			}
			args, _ := json.Marshal(map[string]string{"command": "./snoop scan '" + s.snoopArgs() + "'"})
			s.fake.Push(modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: "call_sh", Name: "shell_exec", Arguments: string(args)}}})
			if code, body := s.do("POST", "/v1/sessions/s2/input", map[string]string{"text": "Look around.", "requestId": "r2"}); code != 202 {
				t.Fatalf("input: %d %s", code, body)
			}
			var g []gh.Gate
			waitUntil(t, "the shell approval card", func() bool { g = s.gates("s2"); return len(g) == 1 })
			if code, body := s.do("POST", "/v1/gates/"+g[0].ID+"/decision", map[string]string{"decision": "approve", "by": "ana"}); code != 200 {
				t.Fatalf("approve: %d %s", code, body)
			}
			s.check(s.report("s2"), true)
		})
	}
}

// The gateway is non-dumpable: a process of its own user outside any
// sandbox (snoop run on the host as the same uid) cannot read its
// /proc/<pid>/environ, so finds none of its secrets there.
func TestGatewayNotDumpableIsolatesItsEnviron(t *testing.T) {
	s := newIsoStack(t, true)
	cmd := exec.Command(s.snoop, "scan", s.snoopArgs(true))
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	cmd.Env = []string{"PATH=/usr/bin:/bin"}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("snoop on the host: %v\n%s", err, out)
	}
	r := parseReport(t, string(out))
	t.Logf("snoop on the host: %+v", r)
	if !strings.Contains(r.GatewayEnviron, "permission denied") {
		t.Errorf("a same-user process read the gateway's environ: %q", r.GatewayEnviron)
	}
	if len(r.Found) != 0 {
		t.Errorf("a same-user process found secrets %v", r.Found)
	}
}

// The control that shows snoop's search works: an MCP server run
// "Isolation": "host" by a gateway running as root reads the gateway's
// environ and finds all three secrets. (It still cannot decide the gate
// without the token, which it now has: that is what isolation prevents.)
func TestMCPServerUnisolatedFindsTheSecrets(t *testing.T) {
	if os.Getuid() != 0 {
		t.Skip("the control needs a gateway running as root")
	}
	s := newIsoStackWith(t, false, "host")
	s.fake.Push(modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: "call_snoop", Name: "snoop__snoop", Arguments: s.snoopArgs(true)}}})
	if code, body := s.do("POST", "/v1/sessions/s2/input", map[string]string{"text": "Look around.", "requestId": "r2"}); code != 202 {
		t.Fatalf("input: %d %s", code, body)
	}
	r := s.report("s2")
	t.Logf("snoop: %+v", r)
	if len(r.Found) != 3 {
		t.Fatalf("unisolated, snoop found %v of the 3 secrets: the search does not work", r.Found)
	}
	if !strings.Contains(s.p.out.String(), "runs unisolated") {
		t.Errorf("the start log does not warn of the unisolated server:\n%s", s.p.out.String())
	}
}

// mcpInfo is GET /v1/info's isolation.mcp.
type mcpInfo []struct {
	Name, Isolation string
	Network         bool
}

func (s isoInfoClient) mcp() mcpInfo {
	_, raw := s.do("GET", "/v1/info", nil)
	var info struct{ Isolation struct{ MCP mcpInfo } }
	json.Unmarshal(raw, &info)
	return info.Isolation.MCP
}

type isoInfoClient struct{ tokenClient }

// usualServers is an MCP config of servers installed the usual ways: a
// Node script and a Python script run by interpreters found in PATH, and
// a Go binary in a directory of its own.
func usualServers(t *testing.T) (string, []string) {
	t.Helper()
	testdata, err := filepath.Abs("../../tools/mcp/testdata")
	if err != nil {
		t.Fatal(err)
	}
	dir := openDir(t)
	bin := filepath.Join(dir, "bin", "addserver")
	if out, err := exec.Command("go", "build", "-o", bin, "../../tools/mcp/testdata/addserver").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	servers := []map[string]any{{"Name": "go", "Command": []string{bin}, "Tier": map[string]string{"add": "safe"}}}
	names := []string{"go"}
	for _, s := range []struct{ name, interp, script string }{
		{"node", "node", filepath.Join(testdata, "jsserver", "server.js")},
		{"python", "python3", filepath.Join(testdata, "pyserver", "server.py")},
	} {
		if _, err := exec.LookPath(s.interp); err != nil {
			t.Logf("no %s: its server is left out", s.interp)
			continue
		}
		servers = append(servers, map[string]any{"Name": s.name, "Command": []string{s.interp, s.script}, "Tier": map[string]string{"add": "safe"}})
		names = append(names, s.name)
	}
	cfg := filepath.Join(dir, "mcp.json")
	raw, _ := json.Marshal(map[string]any{"servers": servers})
	if err := os.WriteFile(cfg, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	return cfg, names
}

// Through the binary, stdio servers installed the usual ways start
// isolated and answer the agent's calls.
func TestMCPServersInstalledTheUsualWaysStartIsolated(t *testing.T) {
	testenv.Bubblewrap(t)
	cfg, names := usualServers(t)
	fake := modeltest.NewOpenAI(t, shellTestKey)
	for i, n := range names {
		fake.Push(modeltest.Reply{ToolCalls: []modeltest.ToolCall{{ID: "call_" + strconv.Itoa(i), Name: n + "__add", Arguments: `{"a":2,"b":3}`}}})
	}
	fake.SetDefault(modeltest.Reply{Text: "Done."})
	p := start(t, "GATEHOUSE_API_TOKEN="+shellTestToken, "GATEHOUSE_MCP_CONFIG="+cfg, "PATH=/usr/local/bin:/usr/bin:/bin",
		"GATEHOUSE_MODEL=openai:test-model", "OPENAI_API_KEY="+shellTestKey, "OPENAI_BASE_URL="+fake.BaseURL(), "GATEHOUSE_MODEL_RETRIES=1")
	c := isoInfoClient{tokenClient{t: t, addr: p.addr}}
	info := c.mcp()
	if len(info) != len(names) {
		t.Fatalf("/v1/info isolation.mcp = %+v, want %v", info, names)
	}
	for _, si := range info {
		if si.Isolation != "sandbox" || si.Network {
			t.Errorf("server %s: %+v, want sandbox without network", si.Name, si)
		}
	}
	if code, body := c.do("POST", "/v1/sessions/s1/input", map[string]string{"text": "Add 2 and 3, every way.", "requestId": "r1"}); code != 202 {
		t.Fatalf("input: %d %s", code, body)
	}
	results := map[string]string{}
	waitUntil(t, "every server's answer", func() bool {
		for _, e := range c.events() {
			if e.Kind == gh.KindToolResult {
				var r gh.ToolResult
				json.Unmarshal(e.Payload, &r)
				results[r.ToolCallID] = r.Content
			}
		}
		return len(results) == len(names)
	})
	for id, content := range results {
		if !strings.Contains(content, "5") {
			t.Errorf("%s answered %q, want 5", id, content)
		}
	}
	p.stopWith(t, syscall.SIGTERM)
}

// Where isolation is unavailable, the stdio servers do not start: the
// start log says so for each, /v1/info says "refused", and the agent has
// none of their tools.
func TestMCPServerRefusedWhereIsolationIsUnavailable(t *testing.T) {
	cfg, names := usualServers(t)
	p := start(t, "GATEHOUSE_API_TOKEN="+shellTestToken, "GATEHOUSE_MCP_CONFIG="+cfg, "GATEHOUSE_SHELL_BWRAP=/nonexistent/bwrap")
	c := isoInfoClient{tokenClient{t: t, addr: p.addr}}
	info := c.mcp()
	if len(info) != len(names) {
		t.Fatalf("/v1/info isolation.mcp = %+v, want %v", info, names)
	}
	for _, si := range info {
		if si.Isolation != "refused" {
			t.Errorf("server %s: %+v, want refused", si.Name, si)
		}
		if !strings.Contains(p.out.String(), `msg="MCP server not started: isolation is unavailable" server=`+si.Name) {
			t.Errorf("the start log does not say %s was not started:\n%s", si.Name, p.out.String())
		}
	}
	if !strings.Contains(p.out.String(), `\"Isolation\": \"host\"`) {
		t.Errorf("the start log does not name the setting that runs them anyway:\n%s", p.out.String())
	}
	p.stopWith(t, syscall.SIGTERM)
}
