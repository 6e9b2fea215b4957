package tools

// Config gathers the configs of the built-in tools.
type Config struct {
	Email     EmailConfig
	WebFetch  WebFetchConfig
	Workspace WorkspaceConfig
	Shell     ShellConfig
}

// Builtin returns every built-in tool: email_send, web_fetch,
// workspace_list, workspace_read, workspace_write and shell_exec. Tools this
// install cannot run (no SMTP configured, shell off) are included; their
// Runnable says why, so a call is refused at once with a reason.
func Builtin(cfg Config) []Tool {
	return append([]Tool{
		NewEmailSend(cfg.Email),
		NewWebFetch(cfg.WebFetch),
		NewShellExec(cfg.Shell),
	}, WorkspaceTools(cfg.Workspace)...)
}
