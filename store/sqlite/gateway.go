package sqlite

import (
	"context"
	"time"

	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/store/sqlite/internal/sqlgateway"
)

// The gateway's rows (see store/gateway.go) and pairing codes and the
// people let in (store/people.go). Their SQL lives in internal/sqlgateway;
// these methods hand it the reader's or the transaction's connection, so
// the store interfaces stay implemented here. SQLite's single writer
// connection serialises every write transaction, which is the per-chat
// lock UpsertAddress promises.

func (t *reader) ReceiveByUpdate(ctx context.Context, platform, updateID string) (store.ReceiveEntry, bool, error) {
	return sqlgateway.ReceiveByUpdate(ctx, t.q, platform, updateID)
}

func (t *reader) ListReceive(ctx context.Context, f store.ReceiveFilter) ([]store.ReceiveEntry, error) {
	return sqlgateway.ListReceive(ctx, t.q, f)
}

func (t *reader) LastReceive(ctx context.Context, platform string) (store.ReceiveEntry, bool, error) {
	return sqlgateway.LastReceive(ctx, t.q, platform)
}

func (t *reader) CountHandedOn(ctx context.Context, platform, chatID string, since time.Time) (int, error) {
	return sqlgateway.CountHandedOn(ctx, t.q, platform, chatID, since)
}

func (t *tx) InsertReceive(ctx context.Context, e store.ReceiveEntry) (store.ReceiveEntry, bool, error) {
	return sqlgateway.InsertReceive(ctx, t.q, e)
}

func (t *tx) InsertReceiveAtCommit(ctx context.Context, e store.ReceiveEntry) error {
	t.atCommit = append(t.atCommit, func(ctx context.Context) error { return sqlgateway.InsertReceiveNow(ctx, t.q, e) })
	return nil
}

func (t *reader) AddressBySession(ctx context.Context, sessionID string) (store.AddressEntry, bool, error) {
	return sqlgateway.AddressBySession(ctx, t.q, sessionID)
}

func (t *reader) AddressesBehind(ctx context.Context, limit int) ([]store.AddressEntry, error) {
	return sqlgateway.AddressesBehind(ctx, t.q, limit)
}

func (t *tx) UpsertAddress(ctx context.Context, e store.AddressEntry) (store.AddressEntry, bool, error) {
	return sqlgateway.UpsertAddress(ctx, t.q, e)
}

func (t *tx) TouchChat(ctx context.Context, e store.AddressEntry, since time.Time) (store.AddressEntry, bool, int, error) {
	return sqlgateway.TouchChat(ctx, t.q, e, since)
}

func (t *writer) AdvanceCursor(ctx context.Context, sessionID string, seq int64, now time.Time) error {
	return sqlgateway.AdvanceCursor(ctx, t.q, sessionID, seq, now)
}

func (t *writer) EnqueueOutbox(ctx context.Context, e store.OutboxEntry) (bool, error) {
	return sqlgateway.EnqueueOutbox(ctx, t.q, e)
}

func (t *reader) OutboxDue(ctx context.Context, platform string, now time.Time, limit int) ([]store.OutboxEntry, error) {
	return sqlgateway.OutboxDue(ctx, t.q, platform, now, limit)
}

func (t *reader) OutboxStuck(ctx context.Context, platform string, now time.Time, limit int) ([]store.OutboxEntry, error) {
	return sqlgateway.OutboxStuck(ctx, t.q, platform, now, limit)
}

func (t *reader) ListOutbox(ctx context.Context, f store.OutboxFilter) ([]store.OutboxEntry, error) {
	return sqlgateway.ListOutbox(ctx, t.q, f)
}

func (t *reader) CountOutbox(ctx context.Context, platform, state string) (int, error) {
	return sqlgateway.CountOutbox(ctx, t.q, platform, state)
}

func (t *writer) ClaimOutbox(ctx context.Context, id int64, owner string, now, until time.Time) (store.OutboxEntry, bool, error) {
	return sqlgateway.ClaimOutbox(ctx, t.q, id, owner, now, until)
}

func (t *writer) UpdateOutbox(ctx context.Context, e store.OutboxEntry) (bool, error) {
	return sqlgateway.UpdateOutbox(ctx, t.q, e)
}

func (t *writer) PutGateCard(ctx context.Context, c store.GateCard) error {
	return sqlgateway.PutGateCard(ctx, t.q, c)
}

func (t *reader) GateCards(ctx context.Context, gateID string) ([]store.GateCard, error) {
	return sqlgateway.GateCards(ctx, t.q, gateID)
}

func (t *reader) GetPlatformLease(ctx context.Context, name string) (store.PlatformLease, bool, error) {
	return sqlgateway.GetPlatformLease(ctx, t.q, name)
}

func (t *writer) AcquirePlatformLease(ctx context.Context, name, owner string, now, until time.Time) (bool, error) {
	return sqlgateway.AcquirePlatformLease(ctx, t.q, name, owner, now, until)
}

func (t *writer) ReleasePlatformLease(ctx context.Context, name, owner string) error {
	return sqlgateway.ReleasePlatformLease(ctx, t.q, name, owner)
}

func (t *tx) PruneGateway(ctx context.Context, before time.Time, limit int) (int, error) {
	return sqlgateway.Prune(ctx, t.q, before, limit)
}

func (t *reader) GetPairingCode(ctx context.Context, code string) (store.PairingCode, error) {
	return sqlgateway.GetPairingCode(ctx, t.q, code)
}

func (t *reader) LivePairingCode(ctx context.Context, platform, userID string, now time.Time) (store.PairingCode, bool, error) {
	return sqlgateway.LivePairingCode(ctx, t.q, platform, userID, now)
}

func (t *reader) CountPairingCodes(ctx context.Context, platform, userID string, since time.Time) (int, error) {
	return sqlgateway.CountPairingCodes(ctx, t.q, platform, userID, since)
}

func (t *reader) PendingPairingCodes(ctx context.Context, now time.Time, limit int) ([]store.PairingCode, error) {
	return sqlgateway.PendingPairingCodes(ctx, t.q, now, limit)
}

func (t *reader) GetPerson(ctx context.Context, platform, userID string) (store.Person, bool, error) {
	return sqlgateway.GetPerson(ctx, t.q, platform, userID)
}

func (t *reader) ListPeople(ctx context.Context, limit int) ([]store.Person, error) {
	return sqlgateway.ListPeople(ctx, t.q, limit)
}

func (t *tx) InsertPairingCode(ctx context.Context, c store.PairingCode) (bool, error) {
	return sqlgateway.InsertPairingCode(ctx, t.q, c)
}

func (t *writer) ClosePairingCode(ctx context.Context, code, state string, now time.Time) (bool, error) {
	return sqlgateway.ClosePairingCode(ctx, t.q, code, state, now)
}

func (t *tx) PutPerson(ctx context.Context, p store.Person) (store.Person, bool, error) {
	return sqlgateway.PutPerson(ctx, t.q, p)
}

func (t *writer) DeletePerson(ctx context.Context, platform, userID string) (bool, error) {
	return sqlgateway.DeletePerson(ctx, t.q, platform, userID)
}

func (t *reader) GetPersonZone(ctx context.Context, userKey string) (store.PersonZone, bool, error) {
	return sqlgateway.GetPersonZone(ctx, t.q, userKey)
}

func (t *reader) ListPersonZones(ctx context.Context, limit int) ([]store.PersonZone, error) {
	return sqlgateway.ListPersonZones(ctx, t.q, limit)
}

func (t *writer) PutPersonZone(ctx context.Context, z store.PersonZone) error {
	return sqlgateway.PutPersonZone(ctx, t.q, z)
}

func (t *writer) DeletePersonZone(ctx context.Context, userKey string) (bool, error) {
	return sqlgateway.DeletePersonZone(ctx, t.q, userKey)
}

func (t *writer) PrunePairingCodes(ctx context.Context, before time.Time, limit int) (int, error) {
	return sqlgateway.PrunePairingCodes(ctx, t.q, before, limit)
}

// The gateway writes of several statements run on the Store in a
// transaction of their own: InsertReceive (the read of the first row after
// a conflict), UpsertAddress (insert, then read or touch), PruneGateway
// (two deletes), InsertPairingCode (close the expired codes, then insert)
// and PutPerson (insert, then read).

// InsertReceive implements store.Writer.
func (s *Store) InsertReceive(ctx context.Context, e store.ReceiveEntry) (out store.ReceiveEntry, ok bool, err error) {
	err = s.InTx(ctx, func(ctx context.Context, t store.Tx) error { out, ok, err = t.InsertReceive(ctx, e); return err })
	return out, ok, err
}

// UpsertAddress implements store.Writer.
func (s *Store) UpsertAddress(ctx context.Context, e store.AddressEntry) (out store.AddressEntry, created bool, err error) {
	err = s.InTx(ctx, func(ctx context.Context, t store.Tx) error { out, created, err = t.UpsertAddress(ctx, e); return err })
	return out, created, err
}

// PruneGateway implements store.Writer.
func (s *Store) PruneGateway(ctx context.Context, before time.Time, limit int) (n int, err error) {
	err = s.InTx(ctx, func(ctx context.Context, t store.Tx) error { n, err = t.PruneGateway(ctx, before, limit); return err })
	return n, err
}

// InsertPairingCode implements store.Writer.
func (s *Store) InsertPairingCode(ctx context.Context, c store.PairingCode) (ok bool, err error) {
	err = s.InTx(ctx, func(ctx context.Context, t store.Tx) error { ok, err = t.InsertPairingCode(ctx, c); return err })
	return ok, err
}

// PutPerson implements store.Writer.
func (s *Store) PutPerson(ctx context.Context, p store.Person) (out store.Person, created bool, err error) {
	err = s.InTx(ctx, func(ctx context.Context, t store.Tx) error { out, created, err = t.PutPerson(ctx, p); return err })
	return out, created, err
}
