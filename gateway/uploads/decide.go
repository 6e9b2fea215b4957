package uploads

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/cards"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/knowledge"
	"github.com/gatehouse/gatehouse/store"
)

// CommitDecisionTx implements gates.Kind: it commits gate.decided
// for g (decided in tx) from outside any run and, for a denial or an
// expiry, tells the chat the file was not added. An approval's add runs
// after the commit (Decided): it downloads the file, which no
// transaction may wait for.
func (s *Service) CommitDecisionTx(ctx context.Context, tx store.Tx, g gh.Gate) ([]kernel.Committed, error) {
	events := []gh.NewEvent{gh.GateDecidedEvent(g)}
	if g.State != gh.GateApproved {
		var c card
		_ = json.Unmarshal(g.Arguments, &c)
		why := cards.DecisionLine(g.State, g.DecidedBy, g.Surface, g.Answer, g.Reason)
		if g.State == gh.GateExpired {
			why = "⌛ No approver decided in time."
		}
		text := fmt.Sprintf("📚 %s was not added to the shared library.\n%s", c.Name, why)
		events = append(events, notice(NoticeNotAdded, text, g.ID))
	}
	cs, err := s.cfg.Kernel.OutsideCommitTx(ctx, tx, g.SessionID, events...)
	if err != nil || cs[0].Duplicate {
		return nil, err
	}
	return cs, nil
}

// Decided implements gates.Kind: an approval decided by this
// process adds the file, in the background, and tells the chat.
func (s *Service) Decided(ctx context.Context, g gh.Gate) {
	if g.State != gh.GateApproved {
		return
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*s.cfg.FetchTimeout)
		defer cancel()
		if err := s.addApproved(actx, g); err != nil {
			s.cfg.Logger.Error("uploads: an approved file's outcome was not told", "gate", g.ID, "err", err)
		}
	}()
}

// addApproved adds the file of approved card g to the shared collection,
// if its bytes are still the ones the approver saw, and tells the chat.
func (s *Service) addApproved(ctx context.Context, g gh.Gate) error {
	var c card
	if err := json.Unmarshal(g.Arguments, &c); err != nil {
		return gh.Wrap(gh.CodeInvalid, err, "library card %s: arguments", g.ID)
	}
	text := s.addShared(ctx, g, c)
	err := s.cfg.Store.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		cs, err := s.cfg.Kernel.OutsideCommitTx(ctx, tx, g.SessionID, notice(NoticeAdded, text, g.ID))
		if err == nil && !cs[0].Duplicate {
			defer s.cfg.Kernel.Publish(g.SessionID, cs)
		}
		return err
	})
	if gh.IsCode(err, gh.CodeIdempotencyConflict) {
		// Another replica added it and told the chat first, in its
		// words ("added" there, "already there" here): told once.
		return nil
	}
	return err
}

// addShared does the add and returns what the chat is told.
func (s *Service) addShared(ctx context.Context, g gh.Gate, c card) string {
	who := cards.Visible(g.DecidedBy)
	if g.DecidedBy == gh.LocalUser {
		who = "the operator"
	}
	fail := func(why string) string {
		return fmt.Sprintf("❌ %s was approved by %s but not added to the shared library: %s", c.Name, who, why)
	}
	if s.cfg.Library == nil {
		return fail("the library is not enabled.")
	}
	fetcher, ok := s.fetcher(c.Platform)
	if !ok {
		return fail("files of " + c.Platform + " cannot be fetched here.")
	}
	data, refusal := s.fetch(ctx, fetcher, gh.File{Name: c.Name, MediaType: c.MediaType, Ref: c.Ref})
	if refusal != "" {
		return fail(refusal + ".")
	}
	if checked, err := s.cfg.Library.Check(c.Name, c.MediaType, data); err != nil || checked.Hash != c.SHA256 {
		return fail("the file fetched now is not the one that was approved (its bytes changed). Send it again to ask anew.")
	}
	if why, err := s.mayReplace(ctx, g, c); err != nil || why != "" {
		if err != nil {
			return fail(gh.ErrorMessage(err) + ".")
		}
		return fail(why)
	}
	doc, changed, err := s.cfg.Library.Add(ctx, knowledge.AddRequest{Collection: knowledge.Shared, Name: c.Name, MediaType: c.MediaType,
		Source: "chat", AddedBy: c.By, Data: data})
	if err != nil {
		return fail(gh.ErrorMessage(err) + ".")
	}
	if !changed {
		return fmt.Sprintf("📚 %s is already in the shared library, unchanged (approved by %s).", c.Name, who)
	}
	s.cfg.Logger.Info("uploads: added a chat's file to the shared library", "gate", g.ID, "document", doc.Name, "passages", doc.Passages, "approved_by", g.DecidedBy)
	return fmt.Sprintf("📚 Added %q (%s) to the shared library, approved by %s: %s.", doc.Title, doc.Name, who, passages(doc.Passages))
}

func notice(code, text, gateID string) gh.NewEvent {
	p, _ := json.Marshal(gh.Notice{Code: code, Text: text})
	return gh.NewEvent{Kind: gh.KindNotice, Payload: p, Key: code + ":" + gateID}
}

// settle is how long after its approval a card's add is left to the
// replica that logged it (Decided) before a sweep takes it over: longer
// than that add may take.
func (s *Service) settle() time.Duration { return 2*s.cfg.FetchTimeout + time.Minute }

// SweepOnce adds the files of approved cards that were never added: the
// replica that logged the approval stopped (a crash, a kill) between the
// decision and the add, and an approval is not lost with it. A card is
// taken over once its approval is older than the settle time, and until
// it expires from the log's view (7 days); the add and its notice are
// idempotent, so two replicas sweeping at once add it once and tell it
// once. It returns how many it added or told.
func (s *Service) SweepOnce(ctx context.Context) (int, error) {
	approved, err := s.cfg.Store.GatesOfKind(ctx, gh.GateKindLibrary, gh.GateApproved, 100)
	if err != nil {
		return 0, err
	}
	now, n := s.cfg.Now(), 0
	for _, g := range approved {
		if age := now.Sub(g.DecidedAt); age < s.settle() || age > 7*24*time.Hour {
			continue
		}
		if _, told, err := s.cfg.Store.EventByKey(ctx, g.SessionID, NoticeAdded+":"+g.ID); err != nil || told {
			if err != nil {
				return n, err
			}
			continue
		}
		s.cfg.Logger.Warn("uploads: an approved file was not added by the replica that logged the approval; adding it now", "gate", g.ID, "approved_at", g.DecidedAt)
		if err := s.addApproved(ctx, g); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// Start runs the sweep of approvals left unadded, every Config.Sweep,
// until Stop.
func (s *Service) Start(ctx context.Context) error {
	return s.sweeper.Start(ctx, "uploads", s.cfg.Sweep, func(ctx context.Context) {
		if _, err := s.SweepOnce(ctx); err != nil && ctx.Err() == nil {
			s.cfg.Logger.Warn("uploads: sweep of approved files failed", "err", err)
		}
	})
}

// Stop ends the sweep and waits for the adds approvals started, until
// ctx ends.
func (s *Service) Stop(ctx context.Context) error {
	if err := s.sweeper.Stop(ctx); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return gh.Wrap(gh.CodeUnavailable, ctx.Err(), "uploads: approved files still being added")
	}
}
