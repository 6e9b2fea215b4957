package people

import (
	"context"
	"strings"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/store"
)

// Admin is who was let in without a restart: the pending pairing codes,
// the people approved, approving and revoking. It needs only the store,
// so the API serves it without a chat platform and `gatehouse pair`
// without a running gateway.
type Admin struct {
	st  store.Store
	now func() time.Time
}

// NewAdmin serves pairing over st; now defaults to time.Now.
func NewAdmin(st store.Store, now func() time.Time) *Admin {
	if now == nil {
		now = time.Now
	}
	return &Admin{st: st, now: now}
}

// List is GET /v1/people.
type List struct {
	// Pending are the codes that can still be approved, newest first.
	Pending []store.PairingCode `json:"pending"`
	// People are those let in, most recently first.
	People []store.Person `json:"people"`
	// Zones are the time zones people chose (/tz) or an admin set, most
	// recently set first: of anyone heard, let in or on an allow-list.
	Zones []store.PersonZone `json:"zones"`
}

// List returns the pending codes, the people let in and the zones set.
func (a *Admin) List(ctx context.Context) (List, error) {
	pending, err := a.st.PendingPairingCodes(ctx, a.now().UTC(), 200)
	if err != nil {
		return List{}, err
	}
	people, err := a.st.ListPeople(ctx, 1000)
	if err != nil {
		return List{}, err
	}
	zones, err := a.st.ListPersonZones(ctx, 1000)
	if err != nil {
		return List{}, err
	}
	if pending == nil {
		pending = []store.PairingCode{}
	}
	if people == nil {
		people = []store.Person{}
	}
	if zones == nil {
		zones = []store.PersonZone{}
	}
	return List{Pending: pending, People: people, Zones: zones}, nil
}

// Approve lets in the sender of a pending code; by says who approved it
// and where. An unknown code is CodeUnknownPairingCode, one past its
// expiry CodePairingCodeExpired, one approved already CodeConflict.
func (a *Admin) Approve(ctx context.Context, code, by string) (store.Person, error) {
	code = NormalizeCode(code)
	if !validCode(code) {
		return store.Person{}, gh.Errorf(gh.CodeUnknownPairingCode, "%q is not a pairing code: codes are %d letters and digits", code, pairingCodeLen)
	}
	var out store.Person
	err := a.st.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		now := a.now().UTC()
		c, err := tx.GetPairingCode(ctx, code)
		if gh.IsCode(err, gh.CodeNotFound) {
			return gh.Errorf(gh.CodeUnknownPairingCode, "no pairing code %s was given", code)
		}
		if err != nil {
			return err
		}
		switch {
		case c.State == store.PairingApproved:
			return gh.Errorf(gh.CodeConflict, "pairing code %s was approved already (%s user %s)", code, c.Platform, c.UserID)
		case c.State == store.PairingExpired || !now.Before(c.ExpiresAt):
			return gh.Errorf(gh.CodePairingCodeExpired, "pairing code %s expired at %s: the person gets a new one when they write again", code, clock(c.ExpiresAt))
		}
		ok, err := tx.ClosePairingCode(ctx, code, store.PairingApproved, now)
		if err != nil {
			return err
		}
		if !ok {
			return gh.Errorf(gh.CodeConflict, "pairing code %s was approved meanwhile", code)
		}
		out, _, err = tx.PutPerson(ctx, store.Person{Platform: c.Platform, UserID: c.UserID, UserName: c.UserName, Code: c.Code,
			ApprovedBy: by, Approved: now})
		return err
	})
	return out, err
}

// Allow lets a user in directly, without a code; created is false when
// they were in already (they stay as first let in).
func (a *Admin) Allow(ctx context.Context, platform, userID, by string) (store.Person, bool, error) {
	platform, userID = strings.TrimSpace(platform), strings.TrimSpace(userID)
	if err := checkUser(platform, userID); err != nil {
		return store.Person{}, false, err
	}
	return a.st.PutPerson(ctx, store.Person{Platform: platform, UserID: userID, ApprovedBy: by, Approved: a.now().UTC()})
}

// Revoke lets a person out: from their next message on, on every replica,
// they are a stranger again. Someone not let in is CodeNotFound (the
// environment's allow-lists are changed there, not here).
func (a *Admin) Revoke(ctx context.Context, platform, userID string) error {
	ok, err := a.st.DeletePerson(ctx, platform, userID)
	if err != nil {
		return err
	}
	if !ok {
		return gh.Errorf(gh.CodeNotFound, "%s user %s was not let in (an allow-list in the environment is changed there)", platform, userID)
	}
	return nil
}

func clock(t time.Time) string { return t.UTC().Format("2006-01-02 15:04 UTC") }
