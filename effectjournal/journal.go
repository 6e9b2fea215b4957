package effectjournal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/kernel"
)

// State of a receipt.
type State string

// Receipt states.
const (
	// None: no receipt; the call never started.
	None     State = ""
	Started  State = "started"
	Finished State = "finished"
)

// Receipt is the payload of an effect.receipt event.
type Receipt struct {
	ID         string `json:"receiptId"`
	ToolCallID string `json:"toolCallId"`
	Tool       string `json:"tool"`
	ArgsHash   string `json:"argsHash"`
	State      State  `json:"state"`
}

// Journal commits and finds receipts through the kernel.
type Journal struct {
	k *kernel.Kernel
}

// New returns a journal over k.
func New(k *kernel.Kernel) *Journal { return &Journal{k: k} }

// ReceiptID names the receipt of one call: the same call always gets the
// same id, which a tool may pass on as an idempotency key.
func ReceiptID(sessionID, toolCallID string) string {
	h := sha256.Sum256([]byte(sessionID + "\x00" + toolCallID))
	return "rcpt_" + hex.EncodeToString(h[:12])
}

// Key is the idempotency key of a call's receipt in state s: one of each
// per call, whoever commits it.
func Key(toolCallID string, s State) string { return "receipt:" + toolCallID + ":" + string(s) }

func key(toolCallID string, s State) string { return Key(toolCallID, s) }

// Lookup returns how far the call's effect got. Receipts commit only under
// a lease, so the attempt's view of the log (kernel.View) answers without
// a read when it holds the whole log.
func (j *Journal) Lookup(ctx context.Context, l gh.Lease, toolCallID string) (State, error) {
	if _, ok, err := j.k.LeasedEventByKey(ctx, l, key(toolCallID, Finished)); err != nil || ok {
		if ok {
			return Finished, nil
		}
		return None, err
	}
	_, ok, err := j.k.LeasedEventByKey(ctx, l, key(toolCallID, Started))
	if err != nil || !ok {
		return None, err
	}
	return Started, nil
}

// Begin commits the started receipt under the lease, before the effect.
func (j *Journal) Begin(ctx context.Context, l gh.Lease, call gh.ToolCall, argsHash string) (Receipt, error) {
	r := Receipt{ID: ReceiptID(l.SessionID, call.ID), ToolCallID: call.ID, Tool: call.Name, ArgsHash: argsHash, State: Started}
	raw, _ := json.Marshal(r)
	_, err := j.k.Commit(ctx, l, gh.NewEvent{Kind: gh.KindReceipt, Payload: raw, Key: key(call.ID, Started)})
	return r, err
}

// Finish commits the effect's result and the finished receipt in one
// transaction: a crash leaves both or neither.
func (j *Journal) Finish(ctx context.Context, l gh.Lease, r Receipt, result gh.NewEvent) ([]kernel.Committed, error) {
	r.State = Finished
	raw, _ := json.Marshal(r)
	return j.k.Commit(ctx, l, result, gh.NewEvent{Kind: gh.KindReceipt, Payload: raw, Key: key(r.ToolCallID, Finished)})
}
