package postgres

import (
	"context"
	"time"

	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/store/postgres/internal/pggateway"
)

// The gateway's rows (see store/gateway.go) and pairing codes and the
// people let in (store/people.go). Their SQL lives in internal/pggateway;
// these methods hand it the executor's or the transaction's connection,
// so the store interfaces stay implemented here.
//
// On the Store (the executor on the pool) each gateway write is one
// statement, its own transaction, except InsertReceive's read of the first
// row after a conflict, which needs no atomicity with the insert that did
// nothing, UpsertAddress, whose row lock outside a transaction lasts only
// for the statement, and PutPerson's read of a person in already.
// InsertPairingCode's two statements commit together: a tx method, run by
// the Store in a transaction of its own.

func (t *executor) ReceiveByUpdate(ctx context.Context, platform, updateID string) (store.ReceiveEntry, bool, error) {
	return pggateway.ReceiveByUpdate(ctx, t.q, platform, updateID)
}

func (t *executor) ListReceive(ctx context.Context, f store.ReceiveFilter) ([]store.ReceiveEntry, error) {
	return pggateway.ListReceive(ctx, t.q, f)
}

func (t *executor) LastReceive(ctx context.Context, platform string) (store.ReceiveEntry, bool, error) {
	return pggateway.LastReceive(ctx, t.q, platform)
}

func (t *executor) CountHandedOn(ctx context.Context, platform, chatID string, since time.Time) (int, error) {
	return pggateway.CountHandedOn(ctx, t.q, platform, chatID, since)
}

func (t *executor) InsertReceive(ctx context.Context, e store.ReceiveEntry) (store.ReceiveEntry, bool, error) {
	return pggateway.InsertReceive(ctx, t.q, e)
}

// InsertReceiveAtCommit defers the insert to the COMMIT's pipeline.
func (t *tx) InsertReceiveAtCommit(ctx context.Context, e store.ReceiveEntry) error {
	pggateway.InsertReceiveAtCommit(t.conn, e)
	return nil
}

func (t *executor) AddressBySession(ctx context.Context, sessionID string) (store.AddressEntry, bool, error) {
	return pggateway.AddressBySession(ctx, t.q, sessionID)
}

func (t *executor) AddressesBehind(ctx context.Context, limit int) ([]store.AddressEntry, error) {
	return pggateway.AddressesBehind(ctx, t.q, limit)
}

func (t *executor) UpsertAddress(ctx context.Context, e store.AddressEntry) (store.AddressEntry, bool, error) {
	return pggateway.UpsertAddress(ctx, t.q, e)
}

// TouchChat (a Tx method: t.conn is set) sends the update and the count in
// one pipeline on the transaction's connection.
func (t *tx) TouchChat(ctx context.Context, e store.AddressEntry, since time.Time) (store.AddressEntry, bool, int, error) {
	return pggateway.TouchChat(ctx, t.conn, e, since)
}

func (t *executor) AdvanceCursor(ctx context.Context, sessionID string, seq int64, now time.Time) error {
	return pggateway.AdvanceCursor(ctx, t.q, sessionID, seq, now)
}

func (t *executor) EnqueueOutbox(ctx context.Context, e store.OutboxEntry) (bool, error) {
	return pggateway.EnqueueOutbox(ctx, t.q, e)
}

func (t *executor) OutboxDue(ctx context.Context, platform string, now time.Time, limit int) ([]store.OutboxEntry, error) {
	return pggateway.OutboxDue(ctx, t.q, platform, now, limit)
}

func (t *executor) OutboxStuck(ctx context.Context, platform string, now time.Time, limit int) ([]store.OutboxEntry, error) {
	return pggateway.OutboxStuck(ctx, t.q, platform, now, limit)
}

func (t *executor) ListOutbox(ctx context.Context, f store.OutboxFilter) ([]store.OutboxEntry, error) {
	return pggateway.ListOutbox(ctx, t.q, f)
}

func (t *executor) CountOutbox(ctx context.Context, platform, state string) (int, error) {
	return pggateway.CountOutbox(ctx, t.q, platform, state)
}

func (t *executor) ClaimOutbox(ctx context.Context, id int64, owner string, now, until time.Time) (store.OutboxEntry, bool, error) {
	return pggateway.ClaimOutbox(ctx, t.q, id, owner, now, until)
}

func (t *executor) UpdateOutbox(ctx context.Context, e store.OutboxEntry) (bool, error) {
	return pggateway.UpdateOutbox(ctx, t.q, e)
}

func (t *executor) PutGateCard(ctx context.Context, c store.GateCard) error {
	return pggateway.PutGateCard(ctx, t.q, c)
}

func (t *executor) GateCards(ctx context.Context, gateID string) ([]store.GateCard, error) {
	return pggateway.GateCards(ctx, t.q, gateID)
}

func (t *executor) GetPlatformLease(ctx context.Context, name string) (store.PlatformLease, bool, error) {
	return pggateway.GetPlatformLease(ctx, t.q, name)
}

func (t *executor) AcquirePlatformLease(ctx context.Context, name, owner string, now, until time.Time) (bool, error) {
	return pggateway.AcquirePlatformLease(ctx, t.q, name, owner, now, until)
}

func (t *executor) ReleasePlatformLease(ctx context.Context, name, owner string) error {
	return pggateway.ReleasePlatformLease(ctx, t.q, name, owner)
}

func (t *executor) PruneGateway(ctx context.Context, before time.Time, limit int) (int, error) {
	return pggateway.Prune(ctx, t.q, before, limit)
}

func (t *executor) GetPairingCode(ctx context.Context, code string) (store.PairingCode, error) {
	return pggateway.GetPairingCode(ctx, t.q, code)
}

func (t *executor) LivePairingCode(ctx context.Context, platform, userID string, now time.Time) (store.PairingCode, bool, error) {
	return pggateway.LivePairingCode(ctx, t.q, platform, userID, now)
}

func (t *executor) CountPairingCodes(ctx context.Context, platform, userID string, since time.Time) (int, error) {
	return pggateway.CountPairingCodes(ctx, t.q, platform, userID, since)
}

func (t *executor) PendingPairingCodes(ctx context.Context, now time.Time, limit int) ([]store.PairingCode, error) {
	return pggateway.PendingPairingCodes(ctx, t.q, now, limit)
}

func (t *executor) GetPerson(ctx context.Context, platform, userID string) (store.Person, bool, error) {
	return pggateway.GetPerson(ctx, t.q, platform, userID)
}

func (t *executor) ListPeople(ctx context.Context, limit int) ([]store.Person, error) {
	return pggateway.ListPeople(ctx, t.q, limit)
}

func (t *tx) InsertPairingCode(ctx context.Context, c store.PairingCode) (bool, error) {
	return pggateway.InsertPairingCode(ctx, t.q, c)
}

// InsertPairingCode implements store.Writer.
func (s *Store) InsertPairingCode(ctx context.Context, c store.PairingCode) (ok bool, err error) {
	err = s.InTx(ctx, func(ctx context.Context, t store.Tx) error { ok, err = t.InsertPairingCode(ctx, c); return err })
	return ok, err
}

func (t *executor) ClosePairingCode(ctx context.Context, code, state string, now time.Time) (bool, error) {
	return pggateway.ClosePairingCode(ctx, t.q, code, state, now)
}

func (t *executor) PutPerson(ctx context.Context, p store.Person) (store.Person, bool, error) {
	return pggateway.PutPerson(ctx, t.q, p)
}

func (t *executor) GetPersonZone(ctx context.Context, userKey string) (store.PersonZone, bool, error) {
	return pggateway.GetPersonZone(ctx, t.q, userKey)
}

func (t *executor) ListPersonZones(ctx context.Context, limit int) ([]store.PersonZone, error) {
	return pggateway.ListPersonZones(ctx, t.q, limit)
}

func (t *executor) PutPersonZone(ctx context.Context, z store.PersonZone) error {
	return pggateway.PutPersonZone(ctx, t.q, z)
}

func (t *executor) DeletePersonZone(ctx context.Context, userKey string) (bool, error) {
	return pggateway.DeletePersonZone(ctx, t.q, userKey)
}

func (t *executor) DeletePerson(ctx context.Context, platform, userID string) (bool, error) {
	return pggateway.DeletePerson(ctx, t.q, platform, userID)
}

func (t *executor) PrunePairingCodes(ctx context.Context, before time.Time, limit int) (int, error) {
	return pggateway.PrunePairingCodes(ctx, t.q, before, limit)
}
