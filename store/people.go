package store

import (
	"context"
	"time"
)

// People let in without a restart (pairing): the one-time codes given to
// strangers who wrote to the agent, and the people an admin let in. Package
// gateway gives them their meaning; the environment's allow-lists are not
// stored here.

// Pairing code states. A pending code whose expiry has passed is no longer
// live; it is closed as expired when its sender is given the next one.
const (
	PairingPending  = "pending"
	PairingApproved = "approved"
	PairingExpired  = "expired"
)

// PairingCode is a one-time code given to a stranger who wrote.
type PairingCode struct {
	Code     string `json:"code"`
	Platform string `json:"platform"`
	UserID   string `json:"userId"`
	UserName string `json:"userName,omitempty"`
	// ChatID is the chat the code was sent to.
	ChatID string `json:"chatId,omitempty"`
	// Text is the start of the message that asked for the code.
	Text  string `json:"text,omitempty"`
	State string `json:"state"`
	// Created is when the stranger's message arrived and the code was given.
	Created   time.Time `json:"createdAt"`
	ExpiresAt time.Time `json:"expiresAt"`
	// Closed is when the code was approved or closed as expired.
	Closed time.Time `json:"closedAt,omitzero"`
}

// Person is someone let in: allowed to talk to the agent on a platform
// until revoked.
type Person struct {
	Platform string `json:"platform"`
	UserID   string `json:"userId"`
	UserName string `json:"userName,omitempty"`
	// Code is the pairing code approved; empty when let in directly.
	Code string `json:"code,omitempty"`
	// ApprovedBy says who let them in, and where (cli, api, web).
	ApprovedBy string    `json:"approvedBy"`
	Approved   time.Time `json:"approvedAt"`
}

// PersonZone is the time zone a person chose (the chat's /tz) or an admin
// set for them: the base prompt's date and time of a turn that answers
// them is in it, not in the gateway's (GATEHOUSE_TIMEZONE). It is kept
// apart from the people let in: most people are let in by an allow-list
// in the environment, which has no row, and revoking a person does not
// take their zone (an admin clears it).
type PersonZone struct {
	// UserKey is the person as the log names them (platform and the
	// hashed user id, gh.UserMessage.UserKey): what a turn reads it by.
	UserKey  string `json:"userKey"`
	Platform string `json:"platform"`
	// UserID is the platform's id of the person, as allow-lists and the
	// people let in name them.
	UserID   string `json:"userId"`
	UserName string `json:"userName,omitempty"`
	// Zone is an IANA time zone name ("Europe/Berlin").
	Zone string `json:"timeZone"`
	// SetBy says who set it and where ("alice (telegram)", "admin (web)").
	SetBy string    `json:"setBy"`
	Set   time.Time `json:"setAt"`
}

// PeopleReader reads pairing codes and people.
type PeopleReader interface {
	// GetPairingCode returns a code in any state, or a CodeNotFound error.
	GetPairingCode(ctx context.Context, code string) (PairingCode, error)
	// LivePairingCode returns the user's pending code that has not expired
	// at now, if any.
	LivePairingCode(ctx context.Context, platform, userID string, now time.Time) (PairingCode, bool, error)
	// CountPairingCodes counts the codes given to the user at or after
	// since, in any state.
	CountPairingCodes(ctx context.Context, platform, userID string, since time.Time) (int, error)
	// PendingPairingCodes lists pending codes not expired at now, newest
	// first, at most limit.
	PendingPairingCodes(ctx context.Context, now time.Time, limit int) ([]PairingCode, error)
	// GetPerson returns the person let in as userID on platform, if any.
	GetPerson(ctx context.Context, platform, userID string) (Person, bool, error)
	// ListPeople lists the people let in, most recently approved first, at
	// most limit.
	ListPeople(ctx context.Context, limit int) ([]Person, error)
	// GetPersonZone returns the time zone set for the person with this
	// user key, if any.
	GetPersonZone(ctx context.Context, userKey string) (PersonZone, bool, error)
	// ListPersonZones lists the zones set, most recently set first, at
	// most limit.
	ListPersonZones(ctx context.Context, limit int) ([]PersonZone, error)
}

// PeopleWriter writes pairing codes and people.
type PeopleWriter interface {
	// InsertPairingCode stores c as its user's pending code, unless the
	// user has a pending code that has not expired at c.Created: then
	// nothing is written and inserted is false. The user's pending codes
	// that have expired by then are closed as expired first. A code
	// already taken (by any user) is a CodeConflict error.
	InsertPairingCode(ctx context.Context, c PairingCode) (inserted bool, err error)
	// ClosePairingCode moves a pending code to state (approved or
	// expired) at now; false when it was not pending (someone closed it
	// first) or does not exist.
	ClosePairingCode(ctx context.Context, code, state string, now time.Time) (bool, error)
	// PutPerson lets p in, unless p's user is in already: then the stored
	// person is returned as it was, with created false.
	PutPerson(ctx context.Context, p Person) (Person, bool, error)
	// DeletePerson revokes a person; false when they were not in.
	DeletePerson(ctx context.Context, platform, userID string) (bool, error)
	// PrunePairingCodes deletes at most limit codes given before before
	// (every state: a pending one is long expired by then) and returns
	// how many went.
	PrunePairingCodes(ctx context.Context, before time.Time, limit int) (int, error)
	// PutPersonZone sets z as its person's time zone, replacing the one
	// set before.
	PutPersonZone(ctx context.Context, z PersonZone) error
	// DeletePersonZone clears a person's time zone (the gateway's applies
	// again); false when none was set.
	DeletePersonZone(ctx context.Context, userKey string) (bool, error)
}
