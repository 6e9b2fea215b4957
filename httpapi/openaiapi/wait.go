package openaiapi

import (
	"context"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/kernel"
)

// wait follows the session's log until the turn at pos has an outcome
// and answers it through out: the answer, a failure, a pending gate (the
// approval text), a turn that ended without an answer, or, after MaxWait
// or on Drain, what was said so far. Text committed meanwhile is passed
// on as it is committed. It returns when the answer is written or the
// client is gone.
func (h *Handler) wait(ctx context.Context, sub *kernel.Subscription, id string, conv *conversation, pos position, after int64, out emitter) {
	// Other replicas' commits come as signals too while the session is
	// followed; the poll is then only a safety net.
	every := h.cfg.Poll
	if release, err := h.k.Follow(ctx, id); err == nil {
		defer release()
		every = 15 * h.cfg.Poll
	}
	poll := time.NewTicker(every)
	defer poll.Stop()
	heartbeat := time.NewTicker(h.cfg.Heartbeat)
	defer heartbeat.Stop()
	deadline := time.NewTimer(h.cfg.MaxWait)
	defer deadline.Stop()

	sent := 0 // texts passed on so far
	pass := func(texts []string) error {
		for ; sent < len(texts); sent++ {
			if err := out.text(sep(sent) + texts[sent]); err != nil {
				return err
			}
		}
		return nil
	}
	// end adds a last text (a status, a failure) and finishes the reply.
	end := func(last string) {
		if last != "" && out.text(sep(sent)+last) != nil {
			return
		}
		out.finish(conv.usageOf(pos.owedFrom, pos.turn))
	}
	for {
		// The run is read before the log: an answer committed with its
		// settle is then always seen with the settled run.
		run, hasRun, err := h.k.LatestRun(ctx, id)
		if err == nil {
			err = h.read(ctx, id, conv)
		}
		if err != nil {
			if ctx.Err() == nil {
				out.fail(err)
			}
			return
		}
		if pass(conv.texts(pos.owedFrom, pos.turn)) != nil {
			return
		}
		t := conv.turns[pos.turn]
		settled := t.stateSeq > after
		switch {
		case settled && t.state == turnAnswered:
			end("")
			h.deliver(id, t.answer)
			return
		case settled && t.state == turnFailed && !(hasRun && run.State.Active()):
			// Answered once its run settled, so that a regenerate
			// that follows finds the run failed.
			end(t.failure)
			return
		case len(conv.pendingGates(t.seq)) > 0:
			// A card of this turn (an earlier turn's card waits on its
			// own: this message is answered meanwhile).
			end(approvalText(conv.pendingGates(t.seq), h.cfg.PublicURL))
			return
		case hasRun && !run.State.Active():
			end(endedText(run))
			return
		}
	idle:
		for {
			select {
			case <-ctx.Done():
				return
			case <-sub.Committed:
				sub.Take() // the log is read instead
				break idle
			case <-poll.C:
				break idle
			case <-heartbeat.C:
				if out.ping() != nil {
					return
				}
			case <-deadline.C:
				end(waitingText(h.cfg.MaxWait, false))
				return
			case <-h.draining:
				end(waitingText(0, true))
				return
			}
		}
	}
}

// sep is what goes before the n-th text of a reply.
func sep(n int) string {
	if n == 0 {
		return ""
	}
	return "\n\n"
}

// usage is Gatehouse's usage as OpenAI counts it.
func usage(u gh.Usage) (prompt, completion int64) {
	return int64(u.InputTokens), int64(u.OutputTokens)
}
