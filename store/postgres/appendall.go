package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/store"
)

// AppendAll implements store.Tx: the appends go in one batch, one round
// trip, each read back in order; an append that wrote nothing without a
// fence (a taken key, or no such session) is then looked up as Append
// does.
func (t *tx) AppendAll(ctx context.Context, ps []store.AppendParams) ([]store.AppendResult, error) {
	if len(ps) == 1 {
		res, err := t.Append(ctx, ps[0])
		if err != nil {
			return nil, err
		}
		return []store.AppendResult{res}, nil
	}
	b := &pgx.Batch{}
	for _, p := range ps {
		if p.QueueRun {
			return nil, gh.Errorf(gh.CodeInternal, "postgres: AppendAll does not queue runs")
		}
		var key *string
		if p.Key != "" {
			key = &p.Key
		}
		if f := p.Fence; f != nil {
			b.Queue(fencedAppendSQL+` SELECT seq, payload FROM e`,
				p.SessionID, p.Tenant, string(p.Kind), string(p.Payload), key, p.Input, p.Kind == gh.KindCompaction, p.Now, f.RunID, f.Epoch, f.Owner)
		} else {
			b.Queue(appendSQL+` SELECT seq, payload FROM e`,
				p.SessionID, p.Tenant, string(p.Kind), string(p.Payload), key, p.Input, p.Kind == gh.KindCompaction, p.Now)
		}
	}
	br, err := t.conn.Batch(ctx, b)
	if err != nil {
		return nil, dbErr(err, "append events")
	}
	out := make([]store.AppendResult, len(ps))
	var missing []int
	for i, p := range ps {
		res := store.AppendResult{Event: gh.Event{SessionID: p.SessionID, Kind: p.Kind, Key: p.Key, CreatedAt: p.Now.UTC()}}
		err := br.QueryRow().Scan(&res.Event.Seq, (*[]byte)(&res.Event.Payload))
		switch {
		case errors.Is(err, pgx.ErrNoRows) && p.Fence != nil:
			res = store.AppendResult{Fenced: true}
		case errors.Is(err, pgx.ErrNoRows):
			missing = append(missing, i)
		case err != nil:
			br.Close()
			return nil, dbErr(err, "append event")
		default:
			t.relayed.add(res.Event)
		}
		out[i] = res
	}
	if err := br.Close(); err != nil {
		return nil, dbErr(err, "append events")
	}
	for _, i := range missing {
		// Append again: it finds the taken key, or says the session is unknown.
		res, err := t.Append(ctx, ps[i])
		if err != nil {
			return nil, err
		}
		out[i] = res
	}
	return out, nil
}
