package main

import (
	"context"
	"log/slog"
	"path/filepath"

	"github.com/gatehouse/gatehouse/httpapi"
	"github.com/gatehouse/gatehouse/models"
	"github.com/gatehouse/gatehouse/tools"
	"github.com/gatehouse/gatehouse/toolworker"
)

// tourWiring is what the built-in tour (scripted:tour) needs besides its
// model: the dev mailbox its approved mails go to, and its demo contacts.
// Both serve only calls the tour made (models.Registry.TourCall): a real
// model's email_send goes over SMTP and resolves names against the
// person's contacts, as if there were no tour.
type tourWiring struct {
	mail     *tools.TourMail
	contacts map[string]string
}

// newTourWiring puts the dev mailbox under the data directory (devmail/).
func newTourWiring(cfg Config, reg *models.Registry) *tourWiring {
	return &tourWiring{
		mail:     &tools.TourMail{Mailbox: tools.NewDevMailbox(filepath.Join(cfg.DataDir, "devmail")), Classify: reg.TourCall},
		contacts: reg.TourContacts(),
	}
}

// policies are the commitment checks: email_send's resolves names against
// the tour's demo contacts for the tour's calls and the person's for all
// others.
func (t *tourWiring) policies(personal toolworker.Contacts) map[string]toolworker.Policy {
	demo := t.contacts
	return map[string]toolworker.Policy{tools.NameEmailSend: tourEmailPolicy{
		EmailPolicy: toolworker.EmailPolicy{Contacts: personal},
		tour:        toolworker.EmailPolicy{Contacts: func(context.Context, string) map[string]string { return demo }},
		classify:    t.mail.Classify,
	}}
}

// tourEmailPolicy is toolworker.EmailPolicy with the address book chosen
// by who made the call.
type tourEmailPolicy struct {
	toolworker.EmailPolicy
	tour     toolworker.EmailPolicy
	classify func(callID, tool string) (claims, genuine bool)
}

// Check implements toolworker.Policy.
func (p tourEmailPolicy) Check(ctx context.Context, call tools.Call) toolworker.Verdict {
	switch claims, genuine := p.classify(call.ID, call.Name); {
	case genuine:
		return p.tour.Check(ctx, call)
	case claims:
		return toolworker.Verdict{Kind: toolworker.Refuse, Reason: "this call claims to come from the tour, which did not make it"}
	}
	return p.EmailPolicy.Check(ctx, call)
}

// missingSettings is every missing-configuration state with its one
// message: logged at start (logMissing), returned by GET /v1/info and
// shown once by the web chat.
func missingSettings(cfg Config, hasModel, hasPlatform bool) []httpapi.MissingSetting {
	var out []httpapi.MissingSetting
	if !hasModel {
		out = append(out, httpapi.MissingSetting{Setting: "GATEHOUSE_MODEL", Message: models.NotConfiguredHint})
	}
	if cfg.SMTPURL == "" && cfg.EmailFrom == "" {
		out = append(out, httpapi.MissingSetting{Setting: "GATEHOUSE_SMTP_URL",
			Message: "No mail server is configured, so email_send is refused. Set GATEHOUSE_SMTP_URL and GATEHOUSE_EMAIL_FROM. (The tour's mails go to its dev mailbox and need neither.)"})
	}
	if !hasPlatform {
		out = append(out, httpapi.MissingSetting{Setting: "chat platform",
			Message: noPlatformHint() + " The web chat and the API work without one."})
	}
	return out
}

// logMissing logs each missing setting once, with its message.
func logMissing(log *slog.Logger, missing []httpapi.MissingSetting) {
	for _, m := range missing {
		log.Warn("not configured: "+m.Message, "setting", m.Setting)
	}
}
