package incidents

import (
	"context"

	gh "github.com/gatehouse/gatehouse"
)

// sweepBatch bounds the runs and cards one sweep looks at.
const sweepBatch = 100

// SweepOnce opens an incident for every run stuck now that has none, and
// retires the cards whose run moved on. It carries on past a failure and
// returns the first. Replicas may sweep at once: a card's key opens it
// once, and its decision is a compare-and-set.
func (s *Service) SweepOnce(ctx context.Context) error {
	var first error
	fail := func(msg string, err error, attrs ...any) {
		if ctx.Err() != nil {
			return
		}
		s.cfg.Logger.Warn(msg, append(attrs, "err", err)...)
		if first == nil {
			first = err
		}
	}
	pending, err := s.st.GatesOfKind(ctx, gh.GateKindIncident, gh.GatePending, sweepBatch)
	if err != nil {
		fail("incidents: list open incidents", err)
	}
	carded := map[int64]bool{}
	for _, g := range pending {
		carded[g.RunID] = true
	}
	stuck, err := s.st.StuckRuns(ctx, s.now().Add(-s.cfg.StuckAfter), sweepBatch)
	if err != nil {
		fail("incidents: list stuck runs", err)
	}
	for _, r := range stuck {
		// One card at a time per run; the first of its step once (later
		// ones come from Diagnose presses).
		if carded[r.ID] {
			continue
		}
		if _, ok, err := s.st.EventByKey(ctx, r.SessionID, openedKey(cardFor(r, 1))); err != nil || ok {
			if err != nil {
				fail("incidents: look up an incident", err, "run", r.ID)
			}
			continue
		}
		if _, _, err := s.open(ctx, r, cardFor(r, 1)); err != nil {
			fail("incidents: open an incident", err, "run", r.ID)
		}
	}
	for _, g := range pending {
		reason, err := s.movedOn(ctx, g)
		if err != nil {
			fail("incidents: check an incident's run", err, "incident", g.ID)
			continue
		}
		if reason == "" {
			continue
		}
		if err := s.retire(ctx, g, reason); err != nil {
			fail("incidents: retire an incident", err, "incident", g.ID)
		}
	}
	if first == nil {
		first = ctx.Err()
	}
	return first
}

// movedOn says why g's run no longer needs its card, or "" while it is
// still stuck where the card says.
func (s *Service) movedOn(ctx context.Context, g gh.Gate) (string, error) {
	c, err := cardOf(g)
	if err != nil {
		return "", err
	}
	r, err := s.st.GetRun(ctx, c.RunID)
	if gh.IsCode(err, gh.CodeNotFound) {
		return "the turn is gone", nil
	}
	if err != nil {
		return "", err
	}
	switch {
	case r.Epoch != c.Epoch || !r.State.Active():
		return "the turn ended", nil
	case r.State != gh.RunRunning:
		return "the turn is waiting for a person", nil
	case r.StepStarted.After(g.Created):
		// A step begun after the card: progress. (A renewal can record a
		// step begun a little before the card, after the sweeper read the
		// one before it: that is not.)
		return "the turn moved on", nil
	}
	return "", nil
}

// retire closes g's card without a press: decided expired by the
// gateway, with why, logged by CommitDecisionTx in the same transaction
// (gates.Service.Retire). A card pressed meanwhile stays as pressed.
func (s *Service) retire(ctx context.Context, g gh.Gate, reason string) error {
	_, _, err := s.cfg.Gates.Retire(ctx, g, reason)
	return err
}

// Start runs the sweeper: a sweep at once, then every Config.Sweep, until
// Stop or the end of ctx.
func (s *Service) Start(ctx context.Context) error {
	return s.sweeper.Start(ctx, "incidents", s.cfg.Sweep, func(ctx context.Context) { _ = s.SweepOnce(ctx) })
}

// Stop stops the sweeper and waits for the sweep and the diagnoses in
// progress, or for the end of ctx.
func (s *Service) Stop(ctx context.Context) error {
	if err := s.sweeper.Stop(ctx); err != nil {
		return err
	}
	all := make(chan struct{})
	go func() {
		s.diagnoses.Wait()
		close(all)
	}()
	select {
	case <-all:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
