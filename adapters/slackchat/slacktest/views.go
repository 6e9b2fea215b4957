package slacktest

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"
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
type SlackInput struct {
	BlockID, ActionID, Label string
	Multiline, Optional      bool
	MaxLength                int
}

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
	v, problem := slackParseView(p["view"])
	if problem != "" {
		f.apiErrorLocked(w, method, "invalid_arguments", problem)
		return
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

// slackParseView checks a modal view: type modal; a plain_text title, and
// close and submit when given, of at most 24 characters; a submit when it
// has inputs; at most 100 blocks with unique block_ids; private_metadata of
// at most 3,000 characters and callback_id of at most 255; input blocks
// with a plain_text label (≤ 2,000) and a plain_text_input (action_id ≤
// 255, max_length ≤ 3,000, placeholder ≤ 150).
func slackParseView(raw string) (*SlackView, string) {
	var v struct {
		Type            string            `json:"type"`
		Title           json.RawMessage   `json:"title"`
		Submit          json.RawMessage   `json:"submit"`
		Close           json.RawMessage   `json:"close"`
		Blocks          []json.RawMessage `json:"blocks"`
		PrivateMetadata string            `json:"private_metadata"`
		CallbackID      string            `json:"callback_id"`
	}
	if raw == "" {
		return nil, "view is required"
	}
	if err := json.Unmarshal([]byte(raw), &v); err != nil {
		return nil, "view must be a JSON object: " + err.Error()
	}
	out := &SlackView{CallbackID: v.CallbackID, PrivateMetadata: v.PrivateMetadata, raw: json.RawMessage(raw)}
	switch {
	case v.Type != "modal":
		return nil, fmt.Sprintf("view type %q: only modal views are opened by views.open", v.Type)
	case utf8.RuneCountInString(v.PrivateMetadata) > 3000:
		return nil, "private_metadata over 3000 characters"
	case len(v.CallbackID) > 255:
		return nil, "callback_id over 255 characters"
	case len(v.Blocks) == 0 || len(v.Blocks) > 100:
		return nil, fmt.Sprintf("a modal has 1 to 100 blocks, not %d", len(v.Blocks))
	}
	t, problem := slackCheckText(v.Title, 24, "plain_text")
	if problem != "" {
		return nil, "title: " + problem
	}
	out.Title = t.Text
	for name, rawText := range map[string]json.RawMessage{"submit": v.Submit, "close": v.Close} {
		if rawText == nil {
			continue
		}
		t, problem := slackCheckText(rawText, 24, "plain_text")
		if problem != "" {
			return nil, name + ": " + problem
		}
		if name == "submit" {
			out.Submit = t.Text
		} else {
			out.Close = t.Text
		}
	}
	ids := map[string]bool{}
	for i, rb := range v.Blocks {
		var b struct {
			Type     string          `json:"type"`
			BlockID  string          `json:"block_id"`
			Text     json.RawMessage `json:"text"`
			Label    json.RawMessage `json:"label"`
			Optional bool            `json:"optional"`
			Element  struct {
				Type        string          `json:"type"`
				ActionID    string          `json:"action_id"`
				Multiline   bool            `json:"multiline"`
				MaxLength   int             `json:"max_length"`
				MinLength   int             `json:"min_length"`
				Placeholder json.RawMessage `json:"placeholder"`
			} `json:"element"`
		}
		if err := json.Unmarshal(rb, &b); err != nil {
			return nil, fmt.Sprintf("block %d: %v", i, err)
		}
		if b.BlockID != "" {
			if len(b.BlockID) > 255 || ids[b.BlockID] {
				return nil, fmt.Sprintf("block %d: block_id %q too long or not unique", i, b.BlockID)
			}
			ids[b.BlockID] = true
		}
		switch b.Type {
		case "section":
			t, problem := slackCheckText(b.Text, 3000, "mrkdwn", "plain_text")
			if problem != "" {
				return nil, fmt.Sprintf("block %d: section text: %s", i, problem)
			}
			out.Texts = append(out.Texts, t.Text)
		case "input":
			l, problem := slackCheckText(b.Label, 2000, "plain_text")
			if problem != "" {
				return nil, fmt.Sprintf("block %d: input label: %s", i, problem)
			}
			e := b.Element
			switch {
			case e.Type != "plain_text_input":
				return nil, fmt.Sprintf("block %d: input element %q is not modelled (plain_text_input is)", i, e.Type)
			case e.ActionID == "" || len(e.ActionID) > 255:
				return nil, fmt.Sprintf("block %d: action_id must be 1 to 255 characters", i)
			case e.MaxLength < 0 || e.MaxLength > 3000 || e.MinLength < 0 || e.MinLength > 3000 || (e.MaxLength > 0 && e.MinLength > e.MaxLength):
				return nil, fmt.Sprintf("block %d: min_length %d and max_length %d must be 0 to 3000, min at most max", i, e.MinLength, e.MaxLength)
			}
			if e.Placeholder != nil {
				if _, problem := slackCheckText(e.Placeholder, 150, "plain_text"); problem != "" {
					return nil, fmt.Sprintf("block %d: placeholder: %s", i, problem)
				}
			}
			if b.BlockID == "" {
				// Slack makes one up; the app then cannot find the value.
				return nil, fmt.Sprintf("block %d: an input without a block_id cannot be read back", i)
			}
			out.Inputs = append(out.Inputs, SlackInput{BlockID: b.BlockID, ActionID: e.ActionID, Label: l.Text,
				Multiline: e.Multiline, Optional: b.Optional, MaxLength: e.MaxLength})
		case "divider", "context", "header", "image", "actions", "rich_text", "markdown":
		default:
			return nil, fmt.Sprintf("block %d: unknown block type %q", i, b.Type)
		}
	}
	if len(out.Inputs) > 0 && out.Submit == "" {
		return nil, "a modal with input blocks needs a submit button"
	}
	return out, ""
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
