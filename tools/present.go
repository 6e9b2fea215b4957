package tools

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	netmail "net/mail"
	"sort"
	"strings"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/tools/mailaddr"
)

// Presenter is implemented by a tool that says what a person approving
// one of its calls must see: each argument that decides what the effect
// does, as the tool will act on it (a recipient as the send parses it, a
// path as the write resolves it), in words rather than JSON. Fields that
// are not FreeText are shown whole on every surface, or the call is
// refused before any card; FreeText (a body, a file's content) may be
// clipped on a chat platform, with a link to the whole card.
//
// Present returns an error for arguments the tool would refuse to run
// with; the call is then answered with it, and no card is opened.
type Presenter interface {
	Present(args json.RawMessage) ([]gh.CardField, error)
}

// Present is what the card of a call of t with args shows: the tool's
// own fields when it is a [Presenter], else [ArgumentFields] — a tool that
// declares nothing has every argument decide its effect.
func Present(t Tool, args json.RawMessage) ([]gh.CardField, error) {
	if p, ok := t.(Presenter); ok {
		return p.Present(args)
	}
	return ArgumentFields(args)
}

// ArgumentFields shows every argument whole, by name in order: a string
// as it is, anything else as compact JSON with its keys sorted. Arguments
// that are not an object are one field, "arguments".
func ArgumentFields(args json.RawMessage) ([]gh.CardField, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(args, &obj); err != nil || obj == nil {
		v, err := canonicalJSON(args)
		if err != nil {
			return nil, fmt.Errorf("the arguments are not JSON: %v", err)
		}
		return []gh.CardField{{Label: "arguments", Value: v}}, nil
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]gh.CardField, 0, len(keys))
	for _, k := range keys {
		var s string
		if json.Unmarshal(obj[k], &s) != nil {
			v, err := canonicalJSON(obj[k])
			if err != nil {
				return nil, fmt.Errorf("argument %q is not JSON: %v", k, err)
			}
			s = v
		}
		out = append(out, gh.CardField{Label: k, Value: s})
	}
	return out, nil
}

// canonicalJSON re-encodes raw compactly with object keys sorted and no
// HTML escaping (a card escapes for its surface itself).
func canonicalJSON(raw json.RawMessage) (string, error) {
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		return "", err
	}
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false)
	if err := e.Encode(v); err != nil {
		return "", err
	}
	return strings.TrimSuffix(b.String(), "\n"), nil
}

// Present implements [Presenter]: the recipients as the send parses them,
// one a line, the address first and a display name apart (a name that
// looks like an address is pointed out), then a warning line of its own
// for each address that is not plain ASCII or that a mail server reads
// differently from how it is written (mailaddr), the subject, and the
// body as free text. Arguments the send would refuse are refused here.
func (t *EmailSend) Present(args json.RawMessage) ([]gh.CardField, error) {
	var a emailArgs
	if err := json.Unmarshal(args, &a); err != nil {
		return nil, fmt.Errorf("email_send: bad arguments: %v", err)
	}
	to, err := parseRecipients(a.To)
	if err != nil {
		return nil, err
	}
	if err := checkSubject(a.Subject); err != nil {
		return nil, err
	}
	lines := make([]string, len(to))
	var notes []gh.CardField
	for i, r := range to {
		lines[i] = recipientLine(r)
		// Each on a line of its own after the recipients, not inside
		// their block: a line of the card, which no address can write.
		for _, n := range r.Addr.Notes() {
			notes = append(notes, gh.CardField{Label: n.Label, Value: n.Text})
		}
	}
	fields := []gh.CardField{{Label: "To", Value: strings.Join(lines, "\n")}}
	fields = append(fields, notes...)
	return append(fields,
		gh.CardField{Label: "Subject", Value: a.Subject},
		gh.CardField{Label: "Body", Value: a.Body, FreeText: true},
	), nil
}

// recipientLine is how a card shows one recipient: the address the mail
// goes to (mapped as a mail server reads it), then the display name,
// quoted, when there is one. A name with an @ in it is pointed out: it is
// what a mail client shows instead of the address.
func recipientLine(r recipient) string {
	addr := r.Addr.Shown()
	if r.Name == "" {
		return addr
	}
	// Quoted as in a mail header; anything invisible in the name is
	// escaped where the card is shown (cards.Visible).
	line := addr + ` (display name "` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(r.Name) + `")`
	if strings.Contains(r.Name, "@") {
		line += " ⚠ the display name looks like an address; the mail goes to " + addr
	}
	return line
}

// recipient is one address email_send's "to" names: the display name as
// written, and the address as a mail server reads it.
type recipient struct {
	Name string
	Addr mailaddr.Address
}

// mail is the recipient as the send gives it to SMTP: the address as
// sent (mailaddr.Address.Sent), the one the card shows.
func (r recipient) mail() *netmail.Address {
	return &netmail.Address{Name: r.Name, Address: r.Addr.Sent()}
}

// parseRecipients parses email_send's "to" as the send does: every
// address the mail goes to, each mapped once (mailaddr.Parse). The card
// (Present), the grant bound (GrantBound) and the SMTP envelope (Run) all
// come from it, so what is approved is what is sent.
func parseRecipients(to string) ([]recipient, error) {
	list, err := netmail.ParseAddressList(to)
	if err != nil || len(list) == 0 {
		if err == nil {
			err = errors.New("no address")
		}
		return nil, gh.Errorf(gh.CodeInvalid, "email_send: not sent: %q is not a valid address list (%v); give addresses like sara@example.com", to, err)
	}
	out := make([]recipient, len(list))
	for i, r := range list {
		addr, err := mailaddr.Parse(r.Address)
		if err != nil {
			var e *gh.Error
			errors.As(err, &e)
			return nil, gh.Wrap(gh.CodeInvalid, e.Err, "email_send: not sent: %s; give addresses like sara@example.com", e.Message)
		}
		out[i] = recipient{Name: r.Name, Addr: addr}
	}
	return out, nil
}

// checkSubject refuses a subject the send refuses.
func checkSubject(subject string) error {
	if strings.ContainsAny(subject, "\r\n") {
		return errors.New("email_send: not sent: the subject must be one line")
	}
	return nil
}

// Present implements [Presenter]: the path as the write resolves it in
// the workspace, and the content as free text. A path the write refuses
// (absolute, leaving the workspace) is refused here.
func (t *WorkspaceWrite) Present(args json.RawMessage) ([]gh.CardField, error) {
	var a struct {
		Path    string `json:"path"`
		Content string `json:"content"`
	}
	if err := json.Unmarshal(args, &a); err != nil {
		return nil, fmt.Errorf("workspace_write: bad arguments: %v", err)
	}
	clean, msg := cleanRelative(a.Path)
	if msg != "" {
		return nil, fmt.Errorf("workspace_write: refused: %s", msg)
	}
	if clean == "." {
		return nil, errors.New("workspace_write: give a file path, not the workspace itself")
	}
	return []gh.CardField{
		{Label: "Path", Value: clean},
		{Label: "Content", Value: a.Content, FreeText: true},
	}, nil
}
