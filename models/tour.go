package models

import (
	"bytes"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strings"

	gh "github.com/gatehouse/gatehouse"
)

// TourModel is the scripted provider's built-in model: the guided tour,
// selected as TourSelection. It needs no script file and no key.
const TourModel = "tour"

// TourSelection is the selection that runs the tour ("scripted:tour").
const TourSelection = providerScripted + ":" + TourModel

// tourCallPrefix starts the id of every tool call the tour asks for.
const tourCallPrefix = "tour_"

//go:embed tour/tour.json
var tourJSON []byte

// tourScript is tour/tour.json: the demo contacts and the scenes.
type tourScript struct {
	// Contacts are the tour's demo address book (name → address). They
	// resolve names only in calls the tour made (see Registry.TourCall).
	Contacts map[string]string `json:"contacts"`
	Scenes   []tourScene       `json:"scenes"`
}

// tourScene answers one kind of message. The newest user message picks the
// first scene with a match it contains ("*": any). A scene either answers
// at once (Say only) or says Say while it asks for Call, and answers the
// call's result with Done, Empty (a result with nothing listed), Denied,
// Expired or Failed. {rest} is the user's text after the matched words,
// {result} the tool's output, {table} the output's "- " lines as a
// Markdown table.
type tourScene struct {
	Name    string          `json:"name"`
	Match   []string        `json:"match"`
	Say     string          `json:"say"`
	Call    *ScriptToolCall `json:"call,omitempty"`
	Done    string          `json:"done,omitempty"`
	Empty   string          `json:"empty,omitempty"`
	Denied  string          `json:"denied,omitempty"`
	Expired string          `json:"expired,omitempty"`
	Failed  string          `json:"failed,omitempty"`
}

// tour is the built-in tour. It keeps no position: each answer is decided
// by the request's messages alone (the newest user message and the tool
// result after it), so any number of chats take it at once and a turn
// resumed after an approval, on any replica, picks up where it stood.
type tour struct {
	script tourScript
	// key signs the ids of the tour's tool calls. It is drawn at random
	// when the registry is built, so it never leaves the process.
	key []byte
}

func newTour() (*tour, error) {
	dec := json.NewDecoder(bytes.NewReader(tourJSON))
	dec.DisallowUnknownFields()
	var s tourScript
	if err := dec.Decode(&s); err != nil {
		return nil, fmt.Errorf("tour script: %w", err)
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("tour key: %w", err)
	}
	return &tour{script: s, key: key}, nil
}

// callID is a fresh id for a call of tool: tour_<nonce>_<mac>, the mac
// over the tool's name and the nonce under the tour's key (88 bits). It
// is 40 characters, all the supervisor keeps of a provider's id when it
// makes it unique in the session (<generation>_<n>_<id>), so the tour's
// part is found at the end of the committed id.
func (t *tour) callID(tool string) string {
	nonce := make([]byte, 6)
	_, _ = rand.Read(nonce) // never fails on the platforms Go supports
	n := hex.EncodeToString(nonce)
	return tourCallPrefix + n + "_" + t.mac(tool, n)
}

func (t *tour) mac(tool, nonce string) string {
	m := hmac.New(sha256.New, t.key)
	m.Write([]byte(tool + "\x00" + nonce))
	return hex.EncodeToString(m.Sum(nil)[:11])
}

// verify reports whether id claims to be a tour call (it holds
// "tour_": the tour's id, as given or after the supervisor's prefix) and
// whether this tour made it, for this tool.
func (t *tour) verify(id, tool string) (claims, genuine bool) {
	at := strings.LastIndex(id, tourCallPrefix)
	if at < 0 {
		return false, false
	}
	rest := id[at+len(tourCallPrefix):]
	nonce, mac, ok := strings.Cut(rest, "_")
	if !ok {
		return true, false
	}
	return true, hmac.Equal([]byte(mac), []byte(t.mac(tool, nonce)))
}

// answer is the tour's response to req.
func (t *tour) answer(req Request) Response {
	user, after := lastUser(req.Messages)
	sc, rest := t.scene(user)
	resp := Response{StopReason: StopEndTurn, Applied: Applied{Thinking: req.Thinking, MaxTokens: req.MaxTokens}}
	result, answered := lastToolResult(after)
	switch {
	case sc.Call == nil:
		resp.Text = fill(sc.Say, rest, "")
	case !answered:
		resp.Text = fill(sc.Say, rest, "")
		args := bytes.ReplaceAll(sc.Call.Arguments, []byte("{rest}"), jsonInner(rest))
		if len(args) == 0 {
			args = json.RawMessage("{}")
		}
		resp.ToolCalls = []gh.ToolCall{{ID: t.callID(sc.Call.Name), Name: sc.Call.Name, Arguments: args}}
		resp.StopReason = StopToolUse
	default:
		resp.Text = sc.closing(result, rest)
	}
	return resp
}

// closing answers the scene's call's result.
func (sc tourScene) closing(result Message, rest string) string {
	out := strings.TrimSpace(result.Text)
	pick := sc.Done
	switch {
	case result.IsError && strings.Contains(out, "denied") && sc.Denied != "":
		pick = sc.Denied
	case result.IsError && strings.Contains(out, "expired") && sc.Expired != "":
		pick = sc.Expired
	case result.IsError:
		pick = sc.Failed
	case sc.Empty != "" && markdownTable(out) == "":
		pick = sc.Empty
	}
	if pick == "" {
		pick = "Tour: " + out
	}
	return strings.NewReplacer("{table}", markdownTable(out)).Replace(fill(pick, rest, out))
}

// scene picks the scene for the user's text and the text after the words
// that matched it ("remember that I like tea" → "I like tea").
func (t *tour) scene(text string) (tourScene, string) {
	low := strings.ToLower(text)
	if len(low) != len(text) {
		text = low // byte offsets in low must hold in text
	}
	for _, sc := range t.script.Scenes {
		for _, m := range sc.Match {
			if m == "*" {
				return sc, ""
			}
			if i := strings.Index(low, m); i >= 0 {
				rest := strings.TrimSpace(text[i+len(m):])
				if r, ok := strings.CutPrefix(strings.ToLower(rest), "that "); ok {
					rest = strings.TrimSpace(rest[len(rest)-len(r):])
				}
				return sc, strings.TrimRight(rest, " .!")
			}
		}
	}
	return tourScene{Say: "Tour: say \"hello\" to see what the tour can show."}, ""
}

// lastUser returns the newest user message's text and the messages after it.
func lastUser(msgs []Message) (string, []Message) {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == RoleUser {
			return msgs[i].Text, msgs[i+1:]
		}
	}
	return "", msgs
}

// lastToolResult is the newest tool message among msgs.
func lastToolResult(msgs []Message) (Message, bool) {
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == RoleTool {
			return msgs[i], true
		}
	}
	return Message{}, false
}

func fill(s, rest, result string) string {
	return strings.NewReplacer("{rest}", rest, "{result}", result).Replace(s)
}

// jsonInner is s as the inside of a JSON string (no quotes).
func jsonInner(s string) []byte {
	b, _ := json.Marshal(s)
	return b[1 : len(b)-1]
}

// markdownTable turns the "- " lines of a tool's output into a Markdown
// table with a numbered row each; "" when there are none.
func markdownTable(out string) string {
	var rows []string
	for line := range strings.SplitSeq(out, "\n") {
		if item, ok := strings.CutPrefix(strings.TrimSpace(line), "- "); ok {
			rows = append(rows, fmt.Sprintf("| %d | %s |", len(rows)+1, strings.ReplaceAll(item, "|", "\\|")))
		}
	}
	if len(rows) == 0 {
		return ""
	}
	return "| # | What I remember |\n| --- | --- |\n" + strings.Join(rows, "\n")
}
