package adminapi

import (
	"net/http"

	"github.com/gatehouse/gatehouse/incidents"
)

var incidentStates = map[string]bool{"": true, incidents.StateOpen: true, "all": true}

// Incidents is GET /v1/incidents?state=open|all&limit=: stuck turns'
// cards, newest first (package incidents), all of them unless state=open.
func (a *API) Incidents(w http.ResponseWriter, r *http.Request) {
	limit, ok := a.list(w, r, "state", incidentStates, "open or all")
	if !ok {
		return
	}
	rows, err := incidents.List(r.Context(), a.cfg.Store, r.URL.Query().Get("state") == incidents.StateOpen, limit)
	writeEntries(a, w, r, rows, err)
}
