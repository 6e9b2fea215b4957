package httpapi

import (
	"net/http"

	"github.com/gatehouse/gatehouse/httpapi/adminapi"
)

// Admin is what the admin endpoints read of the gateway (adminapi.Admin);
// gateway.Gateway is one.
type Admin = adminapi.Admin

// Mailbox is the tour's dev mailbox the admin page lists
// (adminapi.Mailbox); tools.DevMailbox is one.
type Mailbox = adminapi.Mailbox

// admin is the admin endpoints (package adminapi) over this server's
// store and gateway, answering errors as every endpoint does. It is a few
// fields, built per request.
func (s *Server) admin() *adminapi.API {
	return adminapi.New(adminapi.Config{Admin: s.cfg.Admin, Store: s.cfg.Store, NoPlatformHint: s.cfg.NoPlatformHint, Mailbox: s.cfg.DevMail,
		WriteError: func(w http.ResponseWriter, r *http.Request, err error) { writeError(w, r, s.log, err) }})
}

// receiveLog is GET /v1/receive-log: adminapi.API.ReceiveLog.
func (s *Server) receiveLog(w http.ResponseWriter, r *http.Request) { s.admin().ReceiveLog(w, r) }

// adapters is GET /v1/adapters: adminapi.API.Adapters.
func (s *Server) adapters(w http.ResponseWriter, r *http.Request) { s.admin().Adapters(w, r) }

// checkAdapter is POST /v1/adapters/{platform}/check: adminapi.API.Check.
func (s *Server) checkAdapter(w http.ResponseWriter, r *http.Request) { s.admin().Check(w, r) }

// outbox is GET /v1/outbox: adminapi.API.Outbox.
func (s *Server) outbox(w http.ResponseWriter, r *http.Request) { s.admin().Outbox(w, r) }

// incidents is GET /v1/incidents: adminapi.API.Incidents.
func (s *Server) incidents(w http.ResponseWriter, r *http.Request) { s.admin().Incidents(w, r) }

// devMail is GET /v1/devmail: adminapi.API.DevMail.
func (s *Server) devMail(w http.ResponseWriter, r *http.Request) { s.admin().DevMail(w, r) }

// adminStats is GET /v1/admin/stats: adminapi.API.Stats.
func (s *Server) adminStats(w http.ResponseWriter, r *http.Request) { s.admin().Stats(w, r) }

// hooks mounts the platforms' webhooks at /hooks/<platform>. They sit
// outside the API token: each platform proves itself with its own secret
// or signature, which its adapter checks. Bodies are bounded like the
// API's, in size and in time (hookBody).
func (s *Server) hooks(mux *http.ServeMux) {
	for platform, h := range s.cfg.Hooks {
		mux.Handle("POST /hooks/"+platform, s.hookBody(h))
	}
}
