package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	goredis "github.com/redis/go-redis/v9"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gates"
	"github.com/gatehouse/gatehouse/gates/redisgates"
	"github.com/gatehouse/gatehouse/httpapi"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/knowledge"
	"github.com/gatehouse/gatehouse/knowledge/knowledgetool"
	"github.com/gatehouse/gatehouse/memory"
	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/tools"
	"github.com/gatehouse/gatehouse/tools/builtin"
	"github.com/gatehouse/gatehouse/tools/mcp"
	"github.com/gatehouse/gatehouse/tools/sandbox"
	"github.com/gatehouse/gatehouse/tools/shell"
	"github.com/gatehouse/gatehouse/toolworker"
)

// mcpFile is the JSON of GATEHOUSE_MCP_CONFIG.
type mcpFile struct {
	Servers []mcp.MCPServer `json:"servers"`
}

// newToolWorker builds the tools this install offers and the worker that
// runs them. The returned close ends MCP sessions; the isolation is how
// shell_exec and each MCP server run, for GET /v1/info.
func newToolWorker(ctx context.Context, cfg Config, installID string, k *kernel.Kernel, mem *memory.Memory, lib *knowledge.Library, gateSvc *gates.Service, log *slog.Logger, tour *tourWiring) (*toolworker.Worker, func(), *httpapi.IsolationInfo, error) {
	root := cfg.Workspace
	if root == "" {
		root = filepath.Join(cfg.DataDir, "workspace")
	}
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("workspace: %w", err)
	}
	// The files the agent reads and writes are the gateway user's alone.
	if err := privateDir(root); err != nil {
		return nil, nil, nil, fmt.Errorf("workspace %s: %w", root, err)
	}
	builtins := builtin.Tools(builtin.Config{
		Email: tools.EmailConfig{SMTPURL: cfg.SMTPURL, From: cfg.EmailFrom, InstallID: installID, Tour: tour.mail},
		Shell: shell.Config{
			Mode: shell.Mode(cfg.Shell), Bubblewrap: cfg.ShellBubblewrap, Network: cfg.ShellNetwork,
			Timeout: cfg.ShellTimeout, MaxProcesses: cfg.ShellMaxProcesses,
		},
	})
	reg := tools.NewRegistry(builtins...)
	// remember and forget write the memory of the person asking, whoever
	// that is on whichever surface (tools.Call.User).
	for _, t := range mem.Tools() {
		reg.Register(t)
	}
	// search_library reads the library in the asking chat's and person's
	// scope (tools.Call).
	reg.Register(knowledgetool.New(lib))
	closeMCP := func() {}
	iso := &httpapi.IsolationInfo{Shell: "off", MCP: []httpapi.MCPIsolation{}}
	secrets := cfg.Secrets()
	if cfg.MCPConfig != "" {
		raw, err := os.ReadFile(cfg.MCPConfig)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("GATEHOUSE_MCP_CONFIG: %w", err)
		}
		var f mcpFile
		if err := json.Unmarshal(raw, &f); err != nil {
			return nil, nil, nil, fmt.Errorf("GATEHOUSE_MCP_CONFIG %s: %w", cfg.MCPConfig, err)
		}
		// A stdio server gets these of the gateway's environment and what
		// its own config names, nothing else (no token, key or password).
		var base []string
		for _, k := range []string{"PATH", "HOME", "LANG", "TMPDIR"} {
			if v := os.Getenv(k); v != "" {
				base = append(base, k+"="+v)
			}
		}
		for _, srv := range f.Servers {
			secrets = append(secrets, credentialValues(srv.Env)...)
		}
		// Descriptors the gateway inherited (a supervisor's pipe, a socket)
		// are not the servers' business.
		sandbox.SealInheritedDescriptors()
		// A server that reconnects may offer new tools: they join the
		// registry the worker runs from.
		mcpCfg := mcp.Config{Servers: f.Servers, BaseEnv: base, Bubblewrap: cfg.ShellBubblewrap, Register: reg.Register, Logger: log}
		for _, si := range mcp.Isolations(ctx, mcpCfg) {
			iso.MCP = append(iso.MCP, httpapi.MCPIsolation{Name: si.Name, Isolation: si.Isolation, Network: si.Network})
			switch si.Isolation {
			case mcp.IsolationRefused:
				log.Warn("MCP server not started: isolation is unavailable", "server", si.Name, "why", si.Reason)
			case mcp.IsolationHost:
				log.Warn(`MCP server runs unisolated ("Isolation": "host"): it can read the gateway's keys and data`, "server", si.Name)
			default:
				log.Info("MCP server", "server", si.Name, "isolation", si.Isolation, "network", si.Network)
			}
		}
		remote, err := mcp.Connect(ctx, mcpCfg)
		if err != nil {
			// A server that is down leaves its tools out; the others work.
			log.Warn("some MCP servers are unavailable", "err", err)
		}
		for _, t := range remote {
			reg.Register(t)
		}
		closeMCP = func() { remote.Close() }
	}
	for _, t := range builtins {
		if sh, ok := t.(*shell.Tool); ok {
			iso.Shell = shellIsolation(cfg.Shell, sh.Runnable())
		}
		if err := t.Runnable(); err != nil && !(t.Name() == tools.NameEmailSend && cfg.SMTPURL == "" && cfg.EmailFrom == "") { // that one is in missingSettings
			level := slog.LevelInfo
			if t.Name() == shell.ToolName && cfg.Shell != "off" {
				// Asked for and not given: the operator must hear it.
				level = slog.LevelWarn
			}
			log.Log(ctx, level, "tool unavailable on this install", "tool", t.Name(), "why", err)
		} else if sh, ok := t.(*shell.Tool); ok {
			log.Info("shell_exec enabled", "isolation", sh.Isolation())
			if cfg.Shell == "host" {
				log.Warn("shell_exec runs unisolated (GATEHOUSE_SHELL=host): an approved command can read the gateway's keys and data")
			}
		}
	}
	book, _ := parseContacts(cfg.Contacts)
	contacts := personContacts(mem, book)
	w := toolworker.New(toolworker.Config{
		Kernel: k, Tools: reg, ApprovalTimeout: cfg.ApprovalTimeout, GrantTTL: cfg.GrantTTL, ApprovalsNeeded: cfg.ApproverRules().Needed, Logger: log, Gates: gateSvc,
		CardLimit: cardLimit(cfg, log),
		Contacts:  contacts, Policies: tour.policies(contacts),
		Workspace: func(string) string { return root },
		Secrets:   secrets,
	})
	return w, closeMCP, iso, nil
}

// shellIsolation is shell_exec's word in GET /v1/info.
func shellIsolation(mode string, runnable error) string {
	switch {
	case mode == string(shell.Host):
		return "host"
	case mode != string(shell.Isolated):
		return "off"
	case runnable != nil:
		return "unavailable"
	default:
		return "sandbox"
	}
}

// personContacts is the address book the email check resolves names
// against for one person: the config's (GATEHOUSE_CONTACTS), shared by
// everyone, and what that person told the agent ("Sara is
// sara@example.com"), theirs alone; the config wins a conflict. Web and
// API input is the operator's, gh.LocalUser.
func personContacts(mem *memory.Memory, book map[string]string) toolworker.Contacts {
	return func(ctx context.Context, userKey string) map[string]string {
		out := map[string]string{}
		for name, addr := range mem.Contacts(ctx, userKey) {
			out[name] = addr
		}
		for name, addr := range book {
			out[name] = addr
		}
		return out
	}
}

// newGates picks the gate registry: Redis when configured (many
// replicas), else the database's compare-and-set.
func newGates(cfg Config, st store.Store, k *kernel.Kernel, log *slog.Logger) (*gates.Service, *goredis.Client, error) {
	reg := gates.NewSQL(st, nil)
	var rdb *goredis.Client
	if cfg.RedisURL != "" {
		plain, failover, err := redisOptions(cfg.RedisURL)
		if err != nil {
			return nil, nil, err
		}
		if failover != nil {
			// The client asks the Sentinels for the master at every dial
			// and drops its connections on +switch-master, so a failover
			// costs presses only the gap (503 unavailable), no restart.
			rdb = goredis.NewFailoverClient(failover)
		} else {
			rdb = goredis.NewClient(plain)
		}
		reg = redisgates.New(rdb, st, redisgates.Config{})
	}
	return gates.NewService(gates.Config{Registry: reg, Kernel: k, Store: st, Needed: cfg.ApproverRules().Needed, Logger: log}), rdb, nil
}

// redisOptions parses GATEHOUSE_REDIS_URL. A URL with a master_name
// parameter names Sentinels, in go-redis's failover form
// (redis://[user:pass@]sentinel:port[/db]?master_name=NAME&addr=host:port…,
// the userinfo being the Sentinels' credentials and password= the
// master's): failover is set. Else it is one server and plain is set.
func redisOptions(raw string) (plain *goredis.Options, failover *goredis.FailoverOptions, err error) {
	u, err := url.Parse(raw)
	if err != nil {
		// url.Error quotes the whole URL, password and all: keep only why.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, nil, gh.Wrap(gh.CodeInvalid, err, "GATEHOUSE_REDIS_URL is not a URL")
	}
	if !u.Query().Has("master_name") {
		plain, err = goredis.ParseURL(raw)
		if err != nil {
			return nil, nil, gh.Wrap(gh.CodeInvalid, err, "GATEHOUSE_REDIS_URL")
		}
		return plain, nil, nil
	}
	failover, err = goredis.ParseFailoverURL(raw)
	if err != nil {
		return nil, nil, gh.Wrap(gh.CodeInvalid, err, "GATEHOUSE_REDIS_URL (Sentinel form)")
	}
	if failover.MasterName == "" {
		// go-redis would ask the Sentinels for a master named "".
		return nil, nil, gh.Errorf(gh.CodeInvalid, "GATEHOUSE_REDIS_URL (Sentinel form): master_name is empty")
	}
	return nil, failover, nil
}

// credentialName matches the names of environment entries that hold
// credentials (API_KEY, GITHUB_TOKEN, DB_PASSWORD …).
var credentialName = regexp.MustCompile(`(?i)(key|token|secret|pass|auth|cred)`)

// credentialValues returns the values of the "KEY=value" entries whose
// names say they are credentials: an MCP server's own keys are secrets of
// this install too. Other values (PATH, LANG) are not, or every path
// would be redacted from tool output.
func credentialValues(env []string) []string {
	var out []string
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && credentialName.MatchString(k) {
			out = append(out, v)
		}
	}
	return out
}
