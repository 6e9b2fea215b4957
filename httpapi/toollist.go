package httpapi

import (
	"net/http"

	"github.com/gatehouse/gatehouse/tools"
)

// ToolLister lists the tools the agent is offered; *tools.Registry is one.
type ToolLister interface {
	List() []tools.Listing
}

// toolList is GET /v1/tools: every tool offered to the agent, with its
// server, tier, isolation and whether it can run now. Read each time, so
// an MCP server that lost its connection shows it.
func (s *Server) toolList(w http.ResponseWriter, r *http.Request) {
	list := []tools.Listing{}
	if s.cfg.Tools != nil {
		list = s.cfg.Tools.List()
	}
	writeJSON(w, http.StatusOK, map[string]any{"tools": list})
}
