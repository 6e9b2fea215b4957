package toolworker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/store"
	"github.com/gatehouse/gatehouse/tools"
)

// Grants: a tool that declares a grantable bound (tools.Grantable) gets
// "Approve for this chat" on its card (GateOpened.GrantBound). An approval
// with that scope is recorded as a grant — grant.created, fenced, and the
// grants row in one transaction — before the approved call runs; a later
// call of the tool in the session with the same bound then runs without a
// card, through the effect journal, until the grant expires (GrantTTL
// after the decision) or is revoked.

// GrantID names the grant made by approving gate "for this chat".
func GrantID(sessionID, gateID string) string {
	h := sha256.Sum256([]byte("grant\x00" + sessionID + "\x00" + gateID))
	return "gr_" + hex.EncodeToString(h[:10])
}

// grantKey is the idempotency key of a gate's grant.created.
func grantKey(gateID string) string { return "grant:" + gateID }

// grantOffer is the bound a grant of tool's call with args would cover,
// and its label; empty when the tool offers none.
func (w *Worker) grantOffer(tool string, args json.RawMessage) (bound, label string) {
	if w.cfg.ApprovalsNeeded != nil && w.cfg.ApprovalsNeeded(tool) > 1 {
		return "", "" // one press must not approve for everyone after
	}
	t, ok := w.cfg.Tools.Get(tool)
	if !ok {
		return "", ""
	}
	gt, ok := t.(tools.Grantable)
	if !ok {
		return "", ""
	}
	bound, label, ok = gt.GrantBound(args)
	if !ok || bound == "" {
		return "", ""
	}
	return bound, label
}

// A grant covers only a clean turn. Once the turn has read outside text
// (Asker.Tainted: a result marked External, a document sent with the
// message, a chat's library passages), a call a grant would cover gets a
// card as if there were none, with a first line saying why. The turn is
// the one since the person's message that led to the call, so outside
// text read before the grant was made counts as much as text read after
// it: either may have asked for this call, and the person who granted
// the chat approved a recipient, not whatever the next page says to send
// there. A person speaking again starts a clean turn, and the grant
// covers it again.

// TaintedGrantLabel is the label of the card line that says why a call
// a grant would cover was not run under it.
const TaintedGrantLabel = "Why a card"

// TaintedGrantText is what that line says.
const TaintedGrantText = "This turn read outside text (a fetched page, a tool's or server's result, a chat's document) after the grant for this chat, or before it, and a grant covers only a clean turn: decide this call on its own."

// taintedGrantField is the card line of a call a grant would cover in a
// tainted turn. It is not free text: a chat shows it whole.
func taintedGrantField() gh.CardField {
	return gh.CardField{Label: TaintedGrantLabel, Value: TaintedGrantText}
}

// coveringGrant returns the session's grant that covers a call of t with
// args now, if any.
func (w *Worker) coveringGrant(ctx context.Context, sessionID string, t tools.Tool, args json.RawMessage) (store.Grant, bool, error) {
	bound, _ := w.grantOffer(t.Name(), args)
	if bound == "" {
		return store.Grant{}, false, nil
	}
	return w.k.ActiveGrant(ctx, sessionID, t.Name(), bound, w.cfg.Now().UTC())
}

// recordGrant records the grant of a gate approved "for this chat", once:
// it lasts GrantTTL from the decision's commit.
func (w *Worker) recordGrant(ctx context.Context, l gh.Lease, opened *gh.GateOpened, d *gh.GateDecided) error {
	dev, ok, err := w.k.EventByKey(ctx, l.SessionID, "gate:"+opened.GateID)
	if err != nil {
		return err
	}
	at := w.cfg.Now().UTC()
	if ok {
		at = dev.CreatedAt.UTC()
	}
	g := store.Grant{
		ID: GrantID(l.SessionID, opened.GateID), SessionID: l.SessionID, GateID: opened.GateID, Tool: opened.Tool,
		Bound: opened.GrantBound, Label: opened.GrantLabel, GrantedBy: d.By, Surface: d.Surface,
		Created: at, ExpiresAt: at.Add(w.cfg.GrantTTL),
	}
	payload, err := json.Marshal(gh.GrantCreated{GrantID: g.ID, GateID: g.GateID, Tool: g.Tool, Bound: g.Bound, Label: g.Label,
		By: g.GrantedBy, Surface: g.Surface, ExpiresAt: g.ExpiresAt})
	if err != nil {
		return gh.Wrap(gh.CodeInternal, err, "encode grant.created")
	}
	wrote := false
	err = w.k.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		wrote = false
		if _, done, err := tx.EventByKey(ctx, l.SessionID, grantKey(opened.GateID)); err != nil || done {
			return err
		}
		if _, err := w.k.CommitTx(ctx, tx, l, gh.NewEvent{Kind: gh.KindGrantCreated, Payload: payload, Key: grantKey(opened.GateID)}); err != nil {
			return err
		}
		_, created, err := tx.InsertGrant(ctx, g)
		wrote = created
		return err
	})
	if err == nil && wrote {
		w.k.Notify(l.SessionID)
	}
	return err
}

// NoticeGrantUsed is the code of the notice a call run under a grant adds.
const NoticeGrantUsed = "grant-used"

// runGranted runs a call a grant covers: through the effect journal, its
// result saying so, and a notice for the chat.
func (w *Worker) runGranted(ctx context.Context, l gh.Lease, who Asker, c gh.ToolCall, args json.RawMessage, workspace string, g store.Grant) (step, error) {
	st, err := w.runDanger(ctx, l, who, c, args, argsHash(args), workspace, gh.GrantUsedText(g.GrantedBy, g.ExpiresAt))
	if err != nil || st.committed == nil || st.committed.Result.IsError {
		return st, err
	}
	payload, _ := json.Marshal(gh.Notice{Code: NoticeGrantUsed,
		Text: c.Name + " ran without a card, under the grant from " + g.GrantedBy + " for this chat (" + g.Label + "), until " + g.ExpiresAt.UTC().Format("15:04 MST") + "."})
	if _, err := w.k.Commit(ctx, l, gh.NewEvent{Kind: gh.KindNotice, Payload: payload, Key: "grantused:" + c.ID}); err != nil {
		w.cfg.Logger.Warn("the notice of a call run under a grant was not committed", "session", l.SessionID, "call", c.ID, "err", err)
	}
	return st, nil
}
