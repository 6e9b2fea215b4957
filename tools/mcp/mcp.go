package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/internal/backoff"
	"github.com/gatehouse/gatehouse/tools"
)

// Config lists the MCP servers to bridge.
type Config struct {
	Servers []MCPServer
	// Timeout bounds one tool call. Defaults to 60s.
	Timeout time.Duration
	// ConnectTimeout bounds connecting to one server and listing its tools.
	// Defaults to 30s.
	ConnectTimeout time.Duration
	// HTTPClient is used for servers reached by URL. Defaults to
	// http.DefaultClient. It should have no overall Timeout: the session's
	// event stream is long-lived; each call is bounded by Timeout.
	HTTPClient *http.Client
	// ClientName is the name this client gives itself to servers.
	// Defaults to "gatehouse".
	ClientName string
	// BaseEnv is the environment every stdio server starts with; each
	// server's MCPServer.Env is added to it. Defaults to
	// PATH=/usr/local/bin:/usr/bin:/bin only; an empty non-nil list gives
	// none. The package reads no environment itself: cmd/gatehouse passes
	// the gateway's PATH, HOME, LANG and TMPDIR here, and nothing else of
	// its environment (its API token, model keys, SMTP password) reaches a
	// server.
	BaseEnv []string
	// Bubblewrap is the bwrap binary isolated stdio servers run under
	// (Debian's bubblewrap package). Defaults to "bwrap" found in PATH. A
	// path that does not work makes isolation unavailable, and isolated
	// servers then do not start.
	Bubblewrap string
	// Reconnect is the wait between attempts to reach a server again
	// after its connection was lost (a streamable-HTTP server restarted, a
	// stdio server's process died). Defaults to a floor of 1s doubling to
	// a ceiling of 1m, with 20% jitter (internal/backoff). The wait grows
	// while attempts fail and while a connection does not last a whole
	// ceiling; a stdio server is started again through the same isolation
	// it started with.
	Reconnect backoff.Policy
	// ReconnectWait is how long a call waits for its server to come back
	// when the connection was just lost, before it is refused unrun. A
	// server down longer makes its tools unrunnable (the model is told
	// why) until a reconnect succeeds. Defaults to 10s.
	ReconnectWait time.Duration
	// Register is given each tool a server offers after a reconnect that
	// it did not offer before, and each whose input schema changed, so the
	// caller's registry takes it (cmd passes tools.Registry.Register).
	// Defaults to nil: such a new tool is not offered until the gateway
	// restarts. A tool a server no longer offers stays listed, unrunnable.
	Register func(tools.Tool)
	// Logger defaults to slog.Default().
	Logger *slog.Logger
}

// defaultBaseEnv is BaseEnv when none is given.
var defaultBaseEnv = []string{"PATH=/usr/local/bin:/usr/bin:/bin"}

// MCPServer is one MCP server.
type MCPServer struct {
	// Name prefixes the server's tools: "<Name>__<tool>". Letters, digits,
	// '-' and single '_' only.
	Name string
	// Command runs the server as a subprocess spoken to over stdio
	// (Command[0] is the program). Set Command or URL, not both.
	Command []string
	// Env is what the subprocess gets besides Config.BaseEnv: "KEY=value"
	// entries, a key here replacing the base's. The subprocess's whole
	// environment is the base and these, never the gateway's own.
	Env []string
	// Dir is the subprocess's working directory, bound read-only when
	// isolated. Defaults to the gateway's (isolated: its private HOME).
	Dir string
	// Isolation is how a stdio server runs: "sandbox" (IsolationSandbox),
	// or "host" (IsolationHost) to run it as a plain subprocess of the
	// gateway's user, which can read the gateway's keys from /proc.
	// Defaults to "sandbox": under bubblewrap, with its own PID namespace
	// and /proc, none of the gateway's files but its own program and
	// scripts; where isolation is unavailable the server does not start.
	Isolation string
	// Network gives an isolated server the host's network. Defaults to
	// false: no network at all, not even loopback.
	Network bool
	// ReadOnly are more host paths an isolated server sees, read-only, at
	// the same place (its node_modules, a config file). Defaults to none
	// beyond what its Command names (see stdioBinds).
	ReadOnly []string
	// Writable are host paths an isolated server may write, at the same
	// place. Defaults to none: its HOME and /tmp are private tmpfs.
	Writable []string
	// URL is a streamable-HTTP endpoint ("https://host/mcp").
	URL string
	// Tier gives the tier of each tool, by the name the server gives it
	// (without the prefix). Tools not listed are tools.Danger: when not
	// stated, a remote tool is dangerous.
	Tier map[string]tools.Tier
}

// Tools is what Connect returns: the bridged tools, and Close to end the
// sessions behind them. It is a []tools.Tool, so tools.NewRegistry(ts...)
// takes it as it is.
type Tools []tools.Tool

// Close ends the sessions of every server behind ts (stdio servers are
// asked to exit, then terminated) and stops their reconnecting. Their
// tools stop being runnable.
func (ts Tools) Close() error {
	var errs []error
	seen := map[*session]bool{}
	for _, t := range ts {
		tt, ok := t.(*Tool)
		if !ok || seen[tt.sess] {
			continue
		}
		seen[tt.sess] = true
		if err := tt.sess.close(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// Separator joins a server's name and its tool's name.
//
// Why a prefix: two servers may both offer "search", and the registry needs
// one name per tool; a remote server must not be able to shadow a built-in
// tool (a remote "email_send" would otherwise replace ours); and the person
// asked to approve a call sees which server it goes to.
const Separator = "__"

var (
	reServerName = regexp.MustCompile(`^[A-Za-z0-9-]+(_[A-Za-z0-9-]+)*$`)
	reBadChars   = regexp.MustCompile(`[^A-Za-z0-9_-]`)
)

// maxNameLen is the longest tool name model APIs accept (OpenAI's limit).
const maxNameLen = 64

// maxDescRunes caps a remote tool's description: it is text from outside
// that every model request carries.
const maxDescRunes = 2000

// bridge is what the sessions of one Connect share: the config and the
// tool names taken, so a tool a server offers after a reconnect cannot
// take another server's name either.
type bridge struct {
	cfg   Config
	log   *slog.Logger
	mu    sync.Mutex
	names map[string]*session
}

// claim takes name for s; false when another server's tool has it.
func (b *bridge) claim(name string, s *session) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if owner, ok := b.names[name]; ok && owner != s {
		return false
	}
	b.names[name] = s
	return true
}

// Connect connects to every server in cfg, lists its tools and wraps each as
// a tools.Tool named "<server>__<tool>". A server that cannot be reached or
// listed is left out and named in the returned error; the tools of the
// servers that answered are returned all the same, so a caller can start
// without the one that is down (and must Close what it got). A server
// whose connection is lost later is reconnected in the background
// (Config.Reconnect) and its tools listed again.
func Connect(ctx context.Context, cfg Config) (Tools, error) {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 60 * time.Second
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = 30 * time.Second
	}
	if cfg.ReconnectWait <= 0 {
		cfg.ReconnectWait = 10 * time.Second
	}
	if cfg.ClientName == "" {
		cfg.ClientName = "gatehouse"
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	b := &bridge{cfg: cfg, log: cfg.Logger, names: map[string]*session{}}
	var (
		out  Tools
		errs []error
	)
	names := map[string]bool{}
	for _, srv := range cfg.Servers {
		if names[srv.Name] {
			errs = append(errs, fmt.Errorf("mcp server %q: listed twice", srv.Name))
			continue
		}
		names[srv.Name] = true
		ts, left, err := b.start(ctx, srv)
		if err != nil {
			errs = append(errs, fmt.Errorf("mcp server %q: %w", srv.Name, err))
			continue
		}
		errs = append(errs, left...)
		out = append(out, ts...)
	}
	return out, errors.Join(errs...)
}

// start connects to srv and starts watching its connection. left are the
// tools left out because another tool already has their name.
func (b *bridge) start(ctx context.Context, srv MCPServer) ([]tools.Tool, []error, error) {
	if !reServerName.MatchString(srv.Name) {
		return nil, nil, errors.New("the name must be letters, digits, '-' and single '_'")
	}
	if len(srv.Command) > 0 && srv.URL != "" {
		return nil, nil, errors.New("set Command or URL, not both")
	}
	if len(srv.Command) == 0 && srv.URL == "" {
		return nil, nil, errors.New("no Command and no URL")
	}
	c, err := b.dial(ctx, srv)
	if err != nil {
		return nil, nil, err
	}
	isolation := IsolationRemote
	if len(srv.Command) > 0 {
		isolation = srv.isolation()
	}
	s := &session{b: b, srv: srv, name: srv.Name, isolation: isolation, tools: map[string]*Tool{},
		lost: make(chan struct{}, 1), stop: make(chan struct{}), loopDone: make(chan struct{})}
	fresh, _, left := s.adopt(c)
	go s.loop()
	if len(fresh) == 0 {
		// A server with no tools is not kept: nothing would use it.
		_ = s.close()
		return nil, left, nil
	}
	out := make([]tools.Tool, len(fresh))
	for i, t := range fresh {
		out[i] = t
	}
	return out, left, nil
}

// conn is one live connection to a server, and the tools it listed.
type conn struct {
	cs      *sdk.ClientSession
	cleanup func() // after the server ended: what its sandbox left
	list    []*sdk.Tool
}

// dial connects to srv and lists its tools, sorted by name: at start and
// for every reconnect, so a stdio server always starts through the same
// isolation (stdioCommand).
func (b *bridge) dial(ctx context.Context, srv MCPServer) (*conn, error) {
	var (
		transport sdk.Transport
		cleanup   = func() {}
	)
	if len(srv.Command) > 0 {
		cmd, done, err := stdioCommand(ctx, b.cfg, srv)
		if err != nil {
			return nil, err
		}
		cleanup = done
		transport = &sdk.CommandTransport{Command: cmd}
	} else {
		transport = &sdk.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: b.cfg.HTTPClient}
	}
	cctx, cancel := context.WithTimeout(ctx, b.cfg.ConnectTimeout)
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: b.cfg.ClientName, Version: "1"}, nil)
	cs, err := client.Connect(cctx, transport, nil)
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("connect: %w", err)
	}
	c := &conn{cs: cs, cleanup: cleanup}
	for t, err := range cs.Tools(cctx, nil) {
		if err != nil {
			c.end()
			return nil, fmt.Errorf("list tools: %w", err)
		}
		c.list = append(c.list, t)
	}
	slices.SortFunc(c.list, func(a, b *sdk.Tool) int { return strings.Compare(a.Name, b.Name) })
	return c, nil
}

func (c *conn) end() error {
	err := c.cs.Close()
	c.cleanup()
	return err
}

// spec is what a server says of one of its tools, as last listed.
type spec struct {
	desc   string
	schema json.RawMessage
	// gone: the server no longer lists the tool (since a reconnect).
	gone bool
}

func (s *session) specOf(st *sdk.Tool) *spec {
	schema, err := json.Marshal(st.InputSchema)
	if err != nil || string(schema) == "null" {
		schema = []byte(`{"type":"object"}`)
	}
	desc := st.Description
	if desc == "" {
		desc = st.Title
	}
	if r := []rune(desc); len(r) > maxDescRunes {
		desc = string(r[:maxDescRunes]) + "…"
	}
	return &spec{desc: fmt.Sprintf("[MCP server %s] %s", s.name, desc), schema: schema}
}

// serverEnv is a stdio server's whole environment: the base, then its own
// entries (exec keeps the last of two entries with one key). The result is
// never nil: a nil Cmd.Env would hand the server the gateway's environment.
func serverEnv(base, own []string) []string {
	if base == nil {
		base = defaultBaseEnv
	}
	env := make([]string, 0, len(base)+len(own))
	env = append(env, base...)
	return append(env, own...)
}

// toolName is "<server>__<tool>", with characters model APIs refuse
// replaced by '_' and cut to maxNameLen.
func toolName(server, tool string) string {
	n := server + Separator + reBadChars.ReplaceAllString(tool, "_")
	if len(n) > maxNameLen {
		n = n[:maxNameLen]
	}
	return n
}

// session is one server, connected or being reconnected, shared by its
// tools.
type session struct {
	b         *bridge
	srv       MCPServer
	name      string
	isolation string

	mu        sync.Mutex
	c         *conn // nil while the connection is lost
	lostErr   error // why, while c is nil
	lostAt    time.Time
	upAt      time.Time
	failures  int           // attempts in a row that gave no lasting connection
	up        chan struct{} // closed while connected; a fresh one while lost
	tools     map[string]*Tool
	closed    bool
	closeOnce sync.Once
	closeErr  error

	lost     chan struct{} // the connection was lost: the loop wakes
	stop     chan struct{}
	loopDone chan struct{}
	attempts atomic.Int64 // reconnect attempts made
}

// adopt makes c the session's connection and its list the tools' specs.
// fresh are tools not seen before, changed those whose schema changed,
// left the errors of tools whose name another tool has.
func (s *session) adopt(c *conn) (fresh, changed []*Tool, left []error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	listed := map[string]bool{}
	for _, st := range c.list {
		listed[st.Name] = true
		sp := s.specOf(st)
		if t, ok := s.tools[st.Name]; ok {
			if old := t.spec.Swap(sp); string(old.schema) != string(sp.schema) || old.gone {
				changed = append(changed, t)
			}
			continue
		}
		tier := tools.Danger
		if s.srv.Tier[st.Name] == tools.Safe {
			tier = tools.Safe
		}
		t := &Tool{name: toolName(s.name, st.Name), remote: st.Name, tier: tier, sess: s, timeout: s.b.cfg.Timeout}
		t.spec.Store(sp)
		// Two tool names can meet after unusable characters are replaced
		// or a long name is cut: the first keeps the name, the others are
		// left out.
		if !s.b.claim(t.name, s) || slices.ContainsFunc(fresh, func(o *Tool) bool { return o.name == t.name }) {
			left = append(left, fmt.Errorf("mcp server %q: tool %q left out: another tool is already called %q", s.name, st.Name, t.name))
			continue
		}
		s.tools[st.Name] = t
		fresh = append(fresh, t)
	}
	for name, t := range s.tools {
		if !listed[name] {
			old := t.spec.Load()
			t.spec.Store(&spec{desc: old.desc, schema: old.schema, gone: true})
		}
	}
	s.c, s.lostErr, s.upAt = c, nil, time.Now()
	if s.up == nil {
		s.up = make(chan struct{})
	}
	close(s.up)
	go s.watch(c)
	return fresh, changed, left
}

// watch waits for c to end and then reports the loss.
func (s *session) watch(c *conn) {
	err := c.cs.Wait()
	s.lose(c, err)
}

// lose records that c ended (the server exited or restarted, the network
// failed, a call found the server no longer knows the session) and wakes
// the reconnect loop; a loss of a connection that is not current any more
// is ignored.
func (s *session) lose(c *conn, why error) {
	s.mu.Lock()
	if s.c != c || s.closed {
		s.mu.Unlock()
		return
	}
	now := time.Now()
	// A connection that did not last a ceiling's time counts as a failed
	// attempt: a server that accepts and then dies at once is backed off
	// from as one that refuses.
	if now.Sub(s.upAt) >= s.policy().Ceiling {
		s.failures = 0
	} else {
		s.failures++
	}
	if why == nil {
		why = errors.New("the server ended the session")
	}
	s.c, s.lostErr, s.lostAt, s.up = nil, fmt.Errorf("connection lost: %w", why), now, make(chan struct{})
	s.mu.Unlock()
	s.b.log.Warn("MCP server connection lost; reconnecting", "server", s.name, "err", why)
	_ = c.end()
	select {
	case s.lost <- struct{}{}:
	default:
	}
}

// policy is the reconnect policy with its defaults filled in.
func (s *session) policy() backoff.Policy {
	p := s.b.cfg.Reconnect
	if p.Floor <= 0 {
		p.Floor = time.Second
	}
	if p.Ceiling < p.Floor {
		p.Ceiling = max(time.Minute, p.Floor)
	}
	return p
}

// loop reconnects after each loss, waiting the policy's delay before each
// attempt, until the session is closed.
func (s *session) loop() {
	defer close(s.loopDone)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-s.stop
		cancel()
	}()
	p := s.policy()
	for {
		select {
		case <-s.stop:
			return
		case <-s.lost:
		}
		for {
			s.mu.Lock()
			n := s.failures
			s.mu.Unlock()
			t := time.NewTimer(p.Delay(n))
			select {
			case <-s.stop:
				t.Stop()
				return
			case <-t.C:
			}
			s.attempts.Add(1)
			c, err := s.b.dial(ctx, s.srv)
			if err != nil {
				s.mu.Lock()
				s.failures++
				s.lostErr = fmt.Errorf("reconnecting: %w", err)
				s.mu.Unlock()
				s.b.log.Debug("MCP server reconnect failed", "server", s.name, "err", err, "attempt", n+1)
				continue
			}
			s.mu.Lock()
			closed := s.closed
			s.mu.Unlock()
			if closed {
				_ = c.end()
				return
			}
			fresh, changed, left := s.adopt(c)
			s.b.log.Info("MCP server reconnected", "server", s.name, "tools", len(c.list), "new", len(fresh))
			for _, err := range left {
				s.b.log.Warn("MCP tool left out", "err", err)
			}
			if reg := s.b.cfg.Register; reg != nil {
				for _, t := range append(fresh, changed...) {
					reg(t)
				}
			}
			break
		}
	}
}

// current is the live connection, or why there is none.
func (s *session) current() (*conn, <-chan struct{}, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case s.closed:
		return nil, nil, fmt.Errorf("the connection to MCP server %s is closed", s.name)
	case s.c == nil:
		return nil, s.up, gh.Wrap(gh.CodeUnavailable, s.lostErr, "MCP server %s is unavailable since %s", s.name, s.lostAt.UTC().Format(time.RFC3339))
	}
	return s.c, nil, nil
}

// await is the live connection, waiting up to ReconnectWait (and ctx) for
// a reconnect when the connection is lost.
func (s *session) await(ctx context.Context) (*conn, error) {
	c, up, err := s.current()
	if up == nil {
		return c, err
	}
	t := time.NewTimer(s.b.cfg.ReconnectWait)
	defer t.Stop()
	select {
	case <-up:
	case <-t.C:
	case <-ctx.Done():
	}
	return s.connOnly()
}

func (s *session) connOnly() (*conn, error) {
	c, _, err := s.current()
	return c, err
}

func (s *session) close() error {
	s.closeOnce.Do(func() {
		s.mu.Lock()
		s.closed = true
		c := s.c
		s.c = nil
		s.mu.Unlock()
		close(s.stop)
		<-s.loopDone
		if c != nil {
			s.closeErr = c.end()
		}
	})
	return s.closeErr
}

// Tool is one tool of a remote MCP server.
type Tool struct {
	name    string // with the server prefix
	remote  string // as the server names it
	tier    tools.Tier
	sess    *session
	timeout time.Duration
	spec    atomic.Pointer[spec]
}

// Name implements tools.Tool.
func (t *Tool) Name() string { return t.name }

// RemoteName is the tool's name on its server.
func (t *Tool) RemoteName() string { return t.remote }

// Server is the name of the tool's server.
func (t *Tool) Server() string { return t.sess.name }

// Source implements tools.Sourced: the server's name and how it runs
// (sandbox, host or remote).
func (t *Tool) Source() (server, isolation string) { return t.sess.name, t.sess.isolation }

// Description implements tools.Tool.
func (t *Tool) Description() string { return t.spec.Load().desc }

// Schema implements tools.Tool: the input schema the server gave.
func (t *Tool) Schema() json.RawMessage { return t.spec.Load().schema }

// Tier implements tools.Tool: as configured, else tools.Danger.
func (t *Tool) Tier() tools.Tier { return t.tier }

// Available implements tools.Availability: nil only while the server is
// connected and lists the tool.
func (t *Tool) Available() error {
	if _, err := t.sess.connOnly(); err != nil {
		return err
	}
	return t.offered()
}

func (t *Tool) offered() error {
	if t.spec.Load().gone {
		return fmt.Errorf("MCP server %s no longer offers %s", t.sess.name, t.remote)
	}
	return nil
}

// Runnable implements tools.Tool: as Available, except that for
// ReconnectWait after a loss the tool counts as runnable, since a call
// then waits for the reconnect.
func (t *Tool) Runnable() error {
	if _, up, err := t.sess.current(); err != nil {
		if up == nil {
			return err
		}
		t.sess.mu.Lock()
		since := time.Since(t.sess.lostAt)
		t.sess.mu.Unlock()
		if since > t.sess.b.cfg.ReconnectWait {
			return err
		}
	}
	return t.offered()
}

// Idempotent implements tools.Tool. The call's idempotency key is passed to
// the server in _meta ("io.gatehouse/idempotency-key"), but nothing says the
// server honours it.
func (t *Tool) Idempotent() bool { return false }

// MetaIdempotencyKey is the _meta key that carries Call.IdempotencyKey.
const MetaIdempotencyKey = "io.gatehouse/idempotency-key"

// Run implements tools.Tool. The server's output is External, and so is a
// failed call's error (it may quote the server: a JSON-RPC error message,
// a malformed answer). A server that answers with isError gives an IsError
// result; a call whose transport failed returns tools.ErrOutcomeUnknown,
// since the server may have acted. A call made while the connection is
// lost waits up to ReconnectWait for the reconnect; one the server refused
// because it no longer knows the session (it restarted) never reached a
// tool, so it is sent once more on the new connection.
func (t *Tool) Run(ctx context.Context, call tools.Call) (tools.Result, error) {
	var args map[string]any
	if len(call.Arguments) > 0 {
		if err := json.Unmarshal(call.Arguments, &args); err != nil {
			return tools.Result{Content: t.name + ": bad arguments: " + err.Error(), IsError: true}, nil
		}
	}
	params := &sdk.CallToolParams{Name: t.remote, Arguments: args}
	if call.IdempotencyKey != "" {
		params.Meta = sdk.Meta{MetaIdempotencyKey: call.IdempotencyKey}
	}
	cctx, cancel := context.WithTimeout(ctx, t.timeout)
	defer cancel()
	for try := 0; ; try++ {
		c, err := t.sess.await(cctx)
		if err == nil {
			err = t.offered()
		}
		if err != nil {
			return tools.Result{Content: t.name + " cannot run: " + err.Error() + "; the call was not sent", IsError: true}, nil
		}
		res, err := c.cs.CallTool(cctx, params)
		if err != nil && notSent(err) {
			// The call never reached a tool: the server answered 404 for
			// the session (it restarted), or the connection was already
			// ending (a stdio server's process died) before it was sent.
			// The connection is done with; a reconnect follows.
			t.sess.lose(c, err)
			if try == 0 {
				continue
			}
			return tools.Result{Content: fmt.Sprintf("%s cannot run: MCP server %s lost the session again; the call did not run", t.name, t.sess.name), IsError: true}, nil
		}
		if err != nil {
			msg := fmt.Sprintf("%s: the call to MCP server %s failed: %v", t.name, t.sess.name, err)
			if errors.Is(cctx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
				msg = fmt.Sprintf("%s: MCP server %s did not answer within %s", t.name, t.sess.name, t.timeout)
			}
			return tools.Result{Content: msg + "; it may or may not have acted", IsError: true, External: true},
				fmt.Errorf("%s: %w: %v", t.name, tools.ErrOutcomeUnknown, err)
		}
		return tools.Result{Content: contentText(res), IsError: res.IsError, External: true}, nil
	}
}

// notSent reports whether a failed call is known not to have reached the
// server's tool: the server said it has no such session (a restarted
// server's 404), or the connection was closing before the call was written
// — the SDK's jsonrpc2 refuses a new call then with "client is closing",
// where a call in flight when the connection ends gets "server is
// closing". The SDK flattens that inner error to text (ErrConnectionClosed
// wraps it with %v), hence the match on its words.
func notSent(err error) bool {
	return errors.Is(err, sdk.ErrSessionMissing) ||
		(errors.Is(err, sdk.ErrConnectionClosed) && strings.Contains(err.Error(), "client is closing"))
}

// contentText flattens a tool result into text for a model.
func contentText(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, c.Text)
		case *sdk.ImageContent:
			parts = append(parts, fmt.Sprintf("[image %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *sdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio %s, %d bytes]", c.MIMEType, len(c.Data)))
		case *sdk.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource %s %s]", c.Name, c.URI))
		case *sdk.EmbeddedResource:
			switch r := c.Resource; {
			case r == nil:
			case r.Text != "":
				parts = append(parts, fmt.Sprintf("[resource %s]\n%s", r.URI, r.Text))
			default:
				parts = append(parts, fmt.Sprintf("[resource %s %s, %d bytes]", r.URI, r.MIMEType, len(r.Blob)))
			}
		default:
			if b, err := json.Marshal(c); err == nil {
				parts = append(parts, string(b))
			}
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			parts = append(parts, string(b))
		}
	}
	return strings.Join(parts, "\n")
}
