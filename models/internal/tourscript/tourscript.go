package tourscript

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
)

// CallPrefix starts the id of every tool call the tour asks for.
const CallPrefix = "tour_"

//go:embed tour.json
var tourJSON []byte

// Script is tour.json: the demo contacts and the scenes.
type Script struct {
	// Contacts are the tour's demo address book (name → address). They
	// resolve names only in calls the tour made (see models'
	// Registry.TourCall).
	Contacts map[string]string `json:"contacts"`
	Scenes   []Scene           `json:"scenes"`
}

// Scene answers one kind of message. The newest user message picks the
// first scene with a match it contains ("*": any). A scene either answers
// at once (Say only) or says Say while it asks for Call, and answers the
// call's result with Done, Empty (a result with nothing listed), Denied,
// Expired or Failed. {rest} is the user's text after the matched words,
// {result} the tool's output, {table} the output's "- " lines as a
// Markdown table.
type Scene struct {
	Name    string   `json:"name"`
	Match   []string `json:"match"`
	Say     string   `json:"say"`
	Call    *Call    `json:"call,omitempty"`
	Done    string   `json:"done,omitempty"`
	Empty   string   `json:"empty,omitempty"`
	Denied  string   `json:"denied,omitempty"`
	Expired string   `json:"expired,omitempty"`
	Failed  string   `json:"failed,omitempty"`
}

// Call is the tool call a scene asks for; {rest} in its arguments is the
// user's text after the matched words.
type Call struct {
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// Load reads the embedded script.
func Load() (Script, error) {
	dec := json.NewDecoder(bytes.NewReader(tourJSON))
	dec.DisallowUnknownFields()
	var s Script
	if err := dec.Decode(&s); err != nil {
		return Script{}, fmt.Errorf("tour script: %w", err)
	}
	return s, nil
}

// Pick picks the scene for the user's text and the text after the words
// that matched it ("remember that I like tea" → "I like tea").
func (s Script) Pick(text string) (Scene, string) {
	low := strings.ToLower(text)
	if len(low) != len(text) {
		text = low // byte offsets in low must hold in text
	}
	for _, sc := range s.Scenes {
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
	return Scene{Say: "Tour: say \"hello\" to see what the tour can show."}, ""
}

// Arguments are the scene's call's arguments with {rest} filled in.
func (sc Scene) Arguments(rest string) json.RawMessage {
	args := bytes.ReplaceAll(sc.Call.Arguments, []byte("{rest}"), jsonInner(rest))
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	return args
}

// Closing answers the scene's call's result (its text, and whether the
// tool reported an error).
func (sc Scene) Closing(result string, isError bool, rest string) string {
	out := strings.TrimSpace(result)
	pick := sc.Done
	switch {
	case isError && strings.Contains(out, "denied") && sc.Denied != "":
		pick = sc.Denied
	case isError && strings.Contains(out, "expired") && sc.Expired != "":
		pick = sc.Expired
	case isError:
		pick = sc.Failed
	case sc.Empty != "" && markdownTable(out) == "":
		pick = sc.Empty
	}
	if pick == "" {
		pick = "Tour: " + out
	}
	return strings.NewReplacer("{table}", markdownTable(out)).Replace(Fill(pick, rest, out))
}

// Fill puts the user's rest and the tool's result into s.
func Fill(s, rest, result string) string {
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

// Signer signs the ids of the tour's tool calls. Its key is drawn at
// random when it is made, so it never leaves the process.
type Signer struct{ key []byte }

// NewSigner draws a signer's key.
func NewSigner() (Signer, error) {
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return Signer{}, fmt.Errorf("tour key: %w", err)
	}
	return Signer{key: key}, nil
}

// CallID is a fresh id for a call of tool: tour_<nonce>_<mac>, the mac
// over the tool's name and the nonce under the key (88 bits). It is 40
// characters, all the supervisor keeps of a provider's id when it makes it
// unique in the session (<generation>_<n>_<id>), so the tour's part is
// found at the end of the committed id.
func (s Signer) CallID(tool string) string {
	nonce := make([]byte, 6)
	_, _ = rand.Read(nonce) // never fails on the platforms Go supports
	n := hex.EncodeToString(nonce)
	return CallPrefix + n + "_" + s.mac(tool, n)
}

func (s Signer) mac(tool, nonce string) string {
	m := hmac.New(sha256.New, s.key)
	m.Write([]byte(tool + "\x00" + nonce))
	return hex.EncodeToString(m.Sum(nil)[:11])
}

// Verify reports whether id claims to be a tour call (it holds "tour_":
// the tour's id, as given or after the supervisor's prefix) and whether
// this signer made it, for this tool.
func (s Signer) Verify(id, tool string) (claims, genuine bool) {
	at := strings.LastIndex(id, CallPrefix)
	if at < 0 {
		return false, false
	}
	rest := id[at+len(CallPrefix):]
	nonce, mac, ok := strings.Cut(rest, "_")
	if !ok {
		return true, false
	}
	return true, hmac.Equal([]byte(mac), []byte(s.mac(tool, nonce)))
}
