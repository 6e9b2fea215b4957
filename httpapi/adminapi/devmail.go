package adminapi

import (
	"net/http"

	"github.com/gatehouse/gatehouse/tools"
)

// Mailbox is the built-in tour's dev mailbox (tools.DevMailbox is one):
// the mails the tour's approved email_send calls wrote instead of sending.
type Mailbox interface {
	List() ([]tools.DevMail, error)
	Dir() string
}

// DevMail is GET /v1/devmail: {"enabled", "dir", "entries"}, newest
// first. Without a mailbox it answers enabled false and no entries (never
// an error): the admin page then leaves the section out.
func (a *API) DevMail(w http.ResponseWriter, r *http.Request) {
	if a.cfg.Mailbox == nil {
		writeJSON(w, http.StatusOK, map[string]any{"enabled": false, "entries": []tools.DevMail{}})
		return
	}
	mails, err := a.cfg.Mailbox.List()
	if err != nil {
		a.cfg.WriteError(w, r, err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"enabled": true, "dir": a.cfg.Mailbox.Dir(), "entries": mails})
}
