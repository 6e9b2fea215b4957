package httpapi

// IsolationInfo says how the programs the agent can start are isolated
// from the gateway, for GET /v1/info "isolation": an operator (or a
// reviewer) can see from outside whether a stdio MCP server or shell_exec
// could reach the gateway's keys. cmd fills it from what it probed at
// start.
type IsolationInfo struct {
	// Shell is shell_exec's: sandbox, host, off, or unavailable (asked
	// for isolated, and the sandbox cannot be made here).
	Shell string `json:"shell"`
	// MCP has one entry per configured MCP server.
	MCP []MCPIsolation `json:"mcp"`
}

// MCPIsolation is how one MCP server runs.
type MCPIsolation struct {
	Name string `json:"name"`
	// Isolation is sandbox, host, refused (isolated by config, isolation
	// unavailable here: not started) or remote (reached by URL).
	Isolation string `json:"isolation"`
	// Network says whether it can reach the network.
	Network bool `json:"network"`
}
