package slacktest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/gatehouse/gatehouse/adapters/slackchat/slacktest/blockkit"
)

// ---- modals: views.open and view_submission ----

// triggerTTL is how long a trigger_id can open a view: Slack's 3 s.
const triggerTTL = 3 * time.Second

// slackTrigger is a press's trigger_id: who pressed where, and when.
type slackTrigger struct {
	user, channel string
	at            time.Time
	used          bool
}

// SlackView is a modal the app opened, as the fake holds it.
type SlackView struct {
	ID, User, CallbackID, PrivateMetadata string
	Title, Submit, Close                  string
	// Texts are the texts of the view's section blocks.
	Texts []string
	// Inputs are its plain_text_input elements.
	Inputs []SlackInput
	// Submitted is set once the view was submitted (and so closed).
	Submitted bool
	raw       json.RawMessage
}

// SlackInput is one plain_text_input of a modal.
type SlackInput = blockkit.Input

// viewsOpenLocked is views.open: a modal for the user whose press gave the
// trigger_id, within 3 s of the press and once. The view is checked as
// Slack checks it (invalid_arguments with what is wrong).
func (f *SlackFake) viewsOpenLocked(w http.ResponseWriter, p map[string]string) {
	const method = "views.open"
	tr := f.triggers[p["trigger_id"]]
	switch {
	case p["trigger_id"] == "" || tr == nil:
		f.apiErrorLocked(w, method, "invalid_trigger_id", p["trigger_id"])
		return
	case tr.used:
		f.apiErrorLocked(w, method, "exchanged_trigger_id", p["trigger_id"])
		return
	case time.Since(tr.at) > triggerTTL:
		f.apiErrorLocked(w, method, "expired_trigger_id", p["trigger_id"])
		return
	}
	pv, problem := blockkit.ParseView(p["view"])
	if problem != "" {
		f.apiErrorLocked(w, method, "invalid_arguments", problem)
		return
	}
	v := &SlackView{
		CallbackID: pv.CallbackID, PrivateMetadata: pv.PrivateMetadata, Title: pv.Title, Submit: pv.Submit,
		Close: pv.Close, Texts: pv.Texts, Inputs: pv.Inputs, raw: json.RawMessage(p["view"]),
	}
	tr.used = true
	f.seq++
	v.ID, v.User = fmt.Sprintf("V0FAKE%06d", f.seq), tr.user
	f.views[v.ID] = v
	for _, wt := range f.waiters {
		if wt.channel == tr.channel && wt.user == tr.user {
			select {
			case wt.ch <- "modal: " + v.Title:
			default:
			}
		}
	}
	slackWriteJSON(w, http.StatusOK, map[string]any{"ok": true, "view": f.viewJSON(v, nil)})
}

// viewJSON is a view as Slack sends it back, with the values typed into
// its inputs (nil: none yet).
func (f *SlackFake) viewJSON(v *SlackView, values map[string]string) map[string]any {
	var body map[string]any
	_ = json.Unmarshal(v.raw, &body)
	state := map[string]any{}
	for _, in := range v.Inputs {
		val := map[string]any{"type": "plain_text_input"}
		if values != nil {
			val["value"] = values[in.BlockID+"/"+in.ActionID]
		}
		state[in.BlockID] = map[string]any{in.ActionID: val}
	}
	body["id"], body["team_id"], body["app_id"], body["bot_id"] = v.ID, f.TeamID, f.AppID, f.BotID
	body["root_view_id"], body["hash"] = v.ID, "1700000000.fakehash"
	body["state"] = map[string]any{"values": state}
	return body
}

// Views are the modals opened for user, oldest first.
func (f *SlackFake) Views(user string) []SlackView {
	f.mu.Lock()
	defer f.mu.Unlock()
	uid := f.userLocked(user)
	var out []SlackView
	for _, v := range f.views {
		if v.User == uid {
			out = append(out, *v)
		}
	}
	// View ids grow with f.seq: by id is by age.
	for i := range out {
		for j := i + 1; j < len(out); j++ {
			if out[j].ID < out[i].ID {
				out[i], out[j] = out[j], out[i]
			}
		}
	}
	return out
}

// SubmitView submits the open modal viewID as its user, with values typed
// into its inputs ("block_id/action_id" → text), as a view_submission
// interaction, and waits for it to be acknowledged (which closes the
// modal) and for the app's answer in chat about its message msgID: an
// ephemeral message to the user, or that message's new text. As Slack's
// client does, it refuses a value over an input's max_length and a
// missing value of an input that is not optional.
func (f *SlackFake) SubmitView(viewID string, values map[string]string, chat, msgID string) (string, error) {
	f.mu.Lock()
	v := f.views[viewID]
	if v == nil || v.Submitted {
		f.mu.Unlock()
		return "", fmt.Errorf("slack fake: no open view %q", viewID)
	}
	for _, in := range v.Inputs {
		val := values[in.BlockID+"/"+in.ActionID]
		switch {
		case strings.TrimSpace(val) == "" && !in.Optional:
			f.mu.Unlock()
			return "", fmt.Errorf("slack fake: %q is required", in.Label)
		case in.MaxLength > 0 && utf8.RuneCountInString(val) > in.MaxLength:
			f.mu.Unlock()
			return "", fmt.Errorf("slack fake: %q takes at most %d characters", in.Label, in.MaxLength)
		}
	}
	v.Submitted = true
	c := f.chatLocked(chat)
	f.seq++
	trigger := fmt.Sprintf("%d.%d.fake%08d", f.tsBase, f.seq, f.seq)
	handle := f.handles[v.User]
	payload, _ := json.Marshal(map[string]any{
		"type":          "view_submission",
		"token":         "fakeverificationtoken",
		"api_app_id":    f.AppID,
		"team":          map[string]any{"id": f.TeamID, "domain": "fake"},
		"user":          map[string]any{"id": v.User, "username": handle, "name": handle, "team_id": f.TeamID},
		"trigger_id":    trigger,
		"view":          f.viewJSON(v, values),
		"response_urls": []any{},
	})
	w := &slackWaiter{channel: c.id, user: v.User, ts: msgID, ch: make(chan string, 1)}
	f.waiters = append(f.waiters, w)
	d := &slackDelivery{id: trigger, kind: "interactive", payload: payload, ackCh: make(chan struct{})}
	f.deliveries[trigger] = d
	f.mu.Unlock()
	defer f.dropWaiter(w)

	f.deliver(d, "")
	deadline := time.NewTimer(f.opts.ackTimeout)
	defer deadline.Stop()
	select {
	case <-d.ackCh:
	case <-deadline.C:
		f.mu.Lock()
		f.refusalLocked("view_submission %s: not acknowledged within %s", viewID, f.opts.ackTimeout)
		f.mu.Unlock()
		return "", fmt.Errorf("slack fake: view_submission %s not acknowledged within %s", viewID, f.opts.ackTimeout)
	}
	select {
	case reply := <-w.ch:
		return reply, nil
	case <-deadline.C:
		return "", fmt.Errorf("slack fake: view_submission %s not answered within %s", viewID, f.opts.ackTimeout)
	}
}

func (f *SlackFake) dropWaiter(w *slackWaiter) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, x := range f.waiters {
		if x == w {
			f.waiters = append(f.waiters[:i], f.waiters[i+1:]...)
			return
		}
	}
}

// DenyWithReason presses the "Deny with reason…" button data on the bot's
// message msgID in chat as user and, when the app opens a modal for it,
// types reason into the modal's input and submits it. It returns what the
// user was shown last: the press's answer when no modal opened, else the
// answer to the submission (an ephemeral message, or the card's new text).
func (f *SlackFake) DenyWithReason(chat, msgID, data, user, reason string) (string, error) {
	reply, err := f.Press(chat, msgID, data, user)
	if err != nil || !strings.HasPrefix(reply, "modal: ") {
		return reply, err
	}
	views := f.Views(user)
	if len(views) == 0 || len(views[len(views)-1].Inputs) == 0 {
		return "", fmt.Errorf("slack fake: the modal opened for %s has no input", user)
	}
	v := views[len(views)-1]
	in := v.Inputs[0]
	return f.SubmitView(v.ID, map[string]string{in.BlockID + "/" + in.ActionID: reason}, chat, msgID)
}
