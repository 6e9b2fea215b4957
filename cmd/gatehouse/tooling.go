package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	goredis "github.com/redis/go-redis/v9"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gates"
	gatesredis "github.com/gatehouse/gatehouse/gates/redis"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/memory"
	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/supervisor"
	"github.com/gatehouse/gatehouse/tools"
	"github.com/gatehouse/gatehouse/tools/mcp"
	"github.com/gatehouse/gatehouse/toolworker"
)

// mcpFile is the JSON of GATEHOUSE_MCP_CONFIG.
type mcpFile struct {
	Servers []mcp.MCPServer `json:"servers"`
}

// newToolWorker builds the tools this install offers and the worker that
// runs them. The returned close ends MCP sessions.
func newToolWorker(ctx context.Context, cfg Config, k *kernel.Kernel, mem *memory.Memory, onOpen func(context.Context, gh.Gate), log *slog.Logger) (*toolworker.Worker, func(), error) {
	root := cfg.Workspace
	if root == "" {
		root = filepath.Join(cfg.DataDir, "workspace")
	}
	root, err := filepath.Abs(root)
	if err != nil {
		return nil, nil, fmt.Errorf("workspace: %w", err)
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return nil, nil, fmt.Errorf("workspace %s: %w", root, err)
	}
	builtin := tools.Builtin(tools.Config{
		Email: tools.EmailConfig{SMTPURL: cfg.SMTPURL, From: cfg.EmailFrom},
		Shell: tools.ShellConfig{Enabled: cfg.Shell == "on"},
	})
	reg := tools.NewRegistry(builtin...)
	for _, t := range mem.Tools(func() string { return supervisor.UserKey(nil) }) {
		reg.Register(t)
	}
	closeMCP := func() {}
	if cfg.MCPConfig != "" {
		raw, err := os.ReadFile(cfg.MCPConfig)
		if err != nil {
			return nil, nil, fmt.Errorf("GATEHOUSE_MCP_CONFIG: %w", err)
		}
		var f mcpFile
		if err := json.Unmarshal(raw, &f); err != nil {
			return nil, nil, fmt.Errorf("GATEHOUSE_MCP_CONFIG %s: %w", cfg.MCPConfig, err)
		}
		remote, err := mcp.Connect(ctx, mcp.Config{Servers: f.Servers})
		if err != nil {
			// A server that is down leaves its tools out; the others work.
			log.Warn("some MCP servers are unavailable", "err", err)
		}
		for _, t := range remote {
			reg.Register(t)
		}
		closeMCP = func() { remote.Close() }
	}
	for _, t := range builtin {
		if err := t.Runnable(); err != nil {
			log.Info("tool unavailable on this install", "tool", t.Name(), "why", err)
		}
	}
	book, _ := parseContacts(cfg.Contacts)
	// The address book of the config, and what people told the agent
	// ("Sara is sara@example.com"); the config wins a conflict. Web and API
	// input carry no person yet, so their memory is the "local" one.
	contacts := func(ctx context.Context, _ string) map[string]string {
		out := map[string]string{}
		for name, addr := range mem.Contacts(ctx, supervisor.UserKey(nil)) {
			out[name] = addr
		}
		for name, addr := range book {
			out[name] = addr
		}
		return out
	}
	w := toolworker.New(toolworker.Config{
		Kernel: k, Tools: reg, ApprovalTimeout: cfg.ApprovalTimeout, Logger: log, OnOpen: onOpen,
		Contacts:  contacts,
		Workspace: func(string) string { return root },
	})
	return w, closeMCP, nil
}

// newGates picks the gate registry: Redis when configured (many
// replicas), else the database's compare-and-set.
func newGates(cfg Config, st store.Store, k *kernel.Kernel, log *slog.Logger) (*gates.Service, *goredis.Client, error) {
	reg := gates.NewSQL(st, nil)
	var rdb *goredis.Client
	if cfg.RedisURL != "" {
		opts, err := goredis.ParseURL(cfg.RedisURL)
		if err != nil {
			return nil, nil, fmt.Errorf("GATEHOUSE_REDIS_URL: %w", err)
		}
		rdb = goredis.NewClient(opts)
		reg = gatesredis.New(rdb, st, gatesredis.Config{})
	}
	return gates.NewService(gates.Config{Registry: reg, Kernel: k, Logger: log}), rdb, nil
}
