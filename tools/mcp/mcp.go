package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

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
// asked to exit, then terminated). Their tools stop being runnable.
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

// Connect connects to every server in cfg, lists its tools and wraps each as
// a tools.Tool named "<server>__<tool>". A server that cannot be reached or
// listed is left out and named in the returned error; the tools of the
// servers that answered are returned all the same, so a caller can start
// without the one that is down (and must Close what it got).
func Connect(ctx context.Context, cfg Config) (Tools, error) {
	if cfg.Timeout <= 0 {
		cfg.Timeout = 60 * time.Second
	}
	if cfg.ConnectTimeout <= 0 {
		cfg.ConnectTimeout = 30 * time.Second
	}
	if cfg.ClientName == "" {
		cfg.ClientName = "gatehouse"
	}
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
		ts, err := connectOne(ctx, cfg, srv)
		if err != nil {
			errs = append(errs, fmt.Errorf("mcp server %q: %w", srv.Name, err))
			continue
		}
		out = append(out, ts...)
	}
	// Two tool names can meet after unusable characters are replaced or a
	// long name is cut: the first keeps the name, the others are left out.
	seen := map[string]bool{}
	kept := out[:0]
	for _, t := range out {
		if seen[t.Name()] {
			errs = append(errs, fmt.Errorf("mcp server %q: tool %q left out: another tool is already called %q", t.(*Tool).Server(), t.(*Tool).RemoteName(), t.Name()))
			continue
		}
		seen[t.Name()] = true
		kept = append(kept, t)
	}
	return kept, errors.Join(errs...)
}

func connectOne(ctx context.Context, cfg Config, srv MCPServer) ([]tools.Tool, error) {
	if !reServerName.MatchString(srv.Name) {
		return nil, errors.New("the name must be letters, digits, '-' and single '_'")
	}
	var (
		transport sdk.Transport
		cleanup   = func() {}
	)
	switch {
	case len(srv.Command) > 0 && srv.URL != "":
		return nil, errors.New("set Command or URL, not both")
	case len(srv.Command) > 0:
		cmd, done, err := stdioCommand(ctx, cfg, srv)
		if err != nil {
			return nil, err
		}
		cleanup = done
		transport = &sdk.CommandTransport{Command: cmd}
	case srv.URL != "":
		transport = &sdk.StreamableClientTransport{Endpoint: srv.URL, HTTPClient: cfg.HTTPClient}
	default:
		return nil, errors.New("no Command and no URL")
	}

	cctx, cancel := context.WithTimeout(ctx, cfg.ConnectTimeout)
	defer cancel()
	client := sdk.NewClient(&sdk.Implementation{Name: cfg.ClientName, Version: "1"}, nil)
	cs, err := client.Connect(cctx, transport, nil)
	if err != nil {
		cleanup()
		return nil, fmt.Errorf("connect: %w", err)
	}
	sess := &session{name: srv.Name, cs: cs, cleanup: cleanup}
	go func() {
		// A server that exits or drops the session makes its tools
		// unrunnable, so calls are refused at once with the reason.
		_ = cs.Wait()
		sess.closed.Store(true)
	}()
	var list []*sdk.Tool
	for t, err := range cs.Tools(cctx, nil) {
		if err != nil {
			_ = sess.close()
			return nil, fmt.Errorf("list tools: %w", err)
		}
		list = append(list, t)
	}
	if len(list) == 0 {
		_ = sess.close()
		return nil, nil
	}
	slices.SortFunc(list, func(a, b *sdk.Tool) int { return strings.Compare(a.Name, b.Name) })

	out := make([]tools.Tool, 0, len(list))
	for _, st := range list {
		schema, err := json.Marshal(st.InputSchema)
		if err != nil || string(schema) == "null" {
			schema = []byte(`{"type":"object"}`)
		}
		tier := tools.Danger
		if srv.Tier[st.Name] == tools.Safe {
			tier = tools.Safe
		}
		desc := st.Description
		if desc == "" {
			desc = st.Title
		}
		if r := []rune(desc); len(r) > maxDescRunes {
			desc = string(r[:maxDescRunes]) + "…"
		}
		out = append(out, &Tool{
			name:    toolName(srv.Name, st.Name),
			remote:  st.Name,
			desc:    fmt.Sprintf("[MCP server %s] %s", srv.Name, desc),
			schema:  schema,
			tier:    tier,
			sess:    sess,
			timeout: cfg.Timeout,
		})
	}
	return out, nil
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

// session is one connection to one server, shared by its tools.
type session struct {
	name    string
	cs      *sdk.ClientSession
	cleanup func() // after the server ended: what its sandbox left
	closed  atomic.Bool
	once    sync.Once
	err     error
}

func (s *session) close() error {
	s.once.Do(func() {
		s.closed.Store(true)
		s.err = s.cs.Close()
		s.cleanup()
	})
	return s.err
}

// Tool is one tool of a remote MCP server.
type Tool struct {
	name    string // with the server prefix
	remote  string // as the server names it
	desc    string
	schema  json.RawMessage
	tier    tools.Tier
	sess    *session
	timeout time.Duration
}

// Name implements tools.Tool.
func (t *Tool) Name() string { return t.name }

// RemoteName is the tool's name on its server.
func (t *Tool) RemoteName() string { return t.remote }

// Server is the name of the tool's server.
func (t *Tool) Server() string { return t.sess.name }

// Description implements tools.Tool.
func (t *Tool) Description() string { return t.desc }

// Schema implements tools.Tool: the input schema the server gave.
func (t *Tool) Schema() json.RawMessage { return t.schema }

// Tier implements tools.Tool: as configured, else tools.Danger.
func (t *Tool) Tier() tools.Tier { return t.tier }

// Runnable implements tools.Tool.
func (t *Tool) Runnable() error {
	if t.sess.closed.Load() {
		return fmt.Errorf("the connection to MCP server %s is closed", t.sess.name)
	}
	return nil
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
// since the server may have acted.
func (t *Tool) Run(ctx context.Context, call tools.Call) (tools.Result, error) {
	if err := t.Runnable(); err != nil {
		return tools.Result{Content: t.name + " cannot run: " + err.Error(), IsError: true}, nil
	}
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
	res, err := t.sess.cs.CallTool(cctx, params)
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
