// Package builtin gathers the built-in tools: email_send and the
// workspace tools (package tools), web_fetch (tools/webfetch) and
// shell_exec (tools/shell). It exists so that tools itself need not import
// its subpackages, which import it for Tool and Result.
package builtin

import (
	"github.com/gatehouse/gatehouse/tools"
	"github.com/gatehouse/gatehouse/tools/shell"
	"github.com/gatehouse/gatehouse/tools/webfetch"
)

// Config gathers the configs of the built-in tools.
type Config struct {
	Email     tools.EmailConfig
	WebFetch  webfetch.Config
	Workspace tools.WorkspaceConfig
	Shell     shell.Config
}

// Tools returns every built-in tool: email_send, web_fetch,
// workspace_list, workspace_read, workspace_write and shell_exec. Tools this
// install cannot run (no SMTP configured, shell off) are included; their
// Runnable says why, so a call is refused at once with a reason.
func Tools(cfg Config) []tools.Tool {
	return append([]tools.Tool{
		tools.NewEmailSend(cfg.Email),
		webfetch.New(cfg.WebFetch),
		shell.New(cfg.Shell),
	}, tools.WorkspaceTools(cfg.Workspace)...)
}
