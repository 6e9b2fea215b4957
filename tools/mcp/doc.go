// Package mcp bridges tools of remote MCP servers into tools.Tool, through
// the official Go SDK's client: a server is either a subprocess spoken to
// over stdio (sdk.CommandTransport) or an endpoint spoken to over
// streamable HTTP (sdk.StreamableClientTransport).
//
// A stdio server is isolated by default (stdio.go): it runs under
// bubblewrap (tools/sandbox) with a PID namespace and /proc of its own, so
// it cannot read the gateway's /proc/<pid>/environ — a scrubbed
// environment alone does not stop a process of the same user from reading
// the gateway's API token there — and it sees only /usr, a few /etc files,
// its own program and the scripts its command names. Where the sandbox
// cannot be made the server is refused, never quietly run unisolated;
// "Isolation": "host" runs it unisolated, knowingly.
package mcp
