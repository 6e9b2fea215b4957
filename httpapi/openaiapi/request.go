package openaiapi

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strings"

	gh "github.com/gatehouse/gatehouse"
	"github.com/openai/openai-go/v3"
)

// Roles of a conversation as this endpoint reads it.
const (
	roleUser      = "user"
	roleAssistant = "assistant"
)

// message is one user or assistant message of a request, as text.
type message struct {
	role, text string
}

// chatRequest is what a completion request asks, once read.
type chatRequest struct {
	model        string
	stream       bool
	includeUsage bool
	user         string
	// history are the user and assistant messages before the last one;
	// last is the last message, the user's.
	history []message
	last    string
}

// shape is checked with encoding/json before openai-go reads the body:
// openai-go's decoder takes a number for a string, or a string for the
// message list, without complaint.
type shape struct {
	Model         *string           `json:"model"`
	Messages      []json.RawMessage `json:"messages"`
	Stream        *bool             `json:"stream"`
	N             *int64            `json:"n"`
	User          *string           `json:"user"`
	StreamOptions *struct {
		IncludeUsage *bool `json:"include_usage"`
	} `json:"stream_options"`
}

// readRequest reads and checks a completion request.
func (h *Handler) readRequest(w http.ResponseWriter, r *http.Request) (chatRequest, error) {
	body, err := h.body.ReadAll(w, r)
	if err != nil {
		return chatRequest{}, err
	}
	var s shape
	if err := json.Unmarshal(body, &s); err != nil {
		return chatRequest{}, h.body.Error(err)
	}
	if len(s.Messages) == 0 {
		return chatRequest{}, gh.Errorf(gh.CodeInvalid, "messages must hold at least one message, the user's last")
	}
	if s.N != nil && *s.N != 1 {
		return chatRequest{}, gh.Errorf(gh.CodeInvalid, "n must be 1: Gatehouse gives one answer per message")
	}
	var params openai.ChatCompletionNewParams
	if err := json.Unmarshal(body, &params); err != nil {
		return chatRequest{}, h.body.Error(err)
	}
	req := chatRequest{model: deref(s.Model), stream: s.Stream != nil && *s.Stream, user: deref(s.User)}
	if s.StreamOptions != nil && s.StreamOptions.IncludeUsage != nil {
		req.includeUsage = *s.StreamOptions.IncludeUsage
	}
	var msgs []message
	for i, m := range params.Messages {
		msg, keep, err := readMessage(i+1, m)
		if err != nil {
			return chatRequest{}, err
		}
		if keep {
			msgs = append(msgs, msg)
		}
	}
	if len(msgs) == 0 || msgs[len(msgs)-1].role != roleUser {
		return chatRequest{}, gh.Errorf(gh.CodeInvalid, "the last message must be the user's: it is the new input")
	}
	req.history, req.last = msgs[:len(msgs)-1], msgs[len(msgs)-1].text
	if strings.TrimSpace(req.last) == "" {
		return chatRequest{}, gh.Errorf(gh.CodeInvalid, "the last message must not be empty")
	}
	return req, nil
}

// readMessage reads message n: a user or assistant message as text, or
// keep false for a system or developer message (ignored).
func readMessage(n int, m openai.ChatCompletionMessageParamUnion) (message, bool, error) {
	switch {
	case m.OfSystem != nil, m.OfDeveloper != nil:
		return message{}, false, nil
	case m.OfUser != nil:
		c := m.OfUser.Content
		if c.OfString.Valid() {
			return message{role: roleUser, text: c.OfString.Value}, true, nil
		}
		if c.OfArrayOfContentParts == nil {
			return message{}, false, gh.Errorf(gh.CodeInvalid, "message %d: content must be a string or a list of text parts", n)
		}
		var parts []string
		for _, p := range c.OfArrayOfContentParts {
			if p.OfText == nil {
				return message{}, false, gh.Errorf(gh.CodeInvalid, "message %d: only text content is supported, not %s", n, deref(p.GetType()))
			}
			parts = append(parts, p.OfText.Text)
		}
		return message{role: roleUser, text: strings.Join(parts, "\n")}, true, nil
	case m.OfAssistant != nil:
		a := m.OfAssistant
		if len(a.ToolCalls) > 0 {
			return message{}, false, gh.Errorf(gh.CodeInvalid, "message %d: assistant tool calls are not supported: the agent's tools are Gatehouse's", n)
		}
		if a.Content.OfString.Valid() {
			return message{role: roleAssistant, text: a.Content.OfString.Value}, true, nil
		}
		var parts []string
		for _, p := range a.Content.OfArrayOfContentParts {
			if p.OfText != nil {
				parts = append(parts, p.OfText.Text)
			}
		}
		return message{role: roleAssistant, text: strings.Join(parts, "\n")}, true, nil
	case m.OfTool != nil, m.OfFunction != nil:
		return message{}, false, gh.Errorf(gh.CodeInvalid, "message %d: tool and function messages are not supported: the agent's tools are Gatehouse's", n)
	}
	return message{}, false, gh.Errorf(gh.CodeInvalid, "message %d: role must be system, developer, user or assistant", n)
}

// userSessionPrefix starts the session ids made from a user field. Chat
// platforms' prefixes are two letters and "_", so it cannot be one.
const userSessionPrefix = "oai_"

// sessionFor is the session a request's conversation maps to: the
// SessionHeader, else the user field hashed into a valid id.
func sessionFor(r *http.Request, user string) (string, error) {
	if id := strings.TrimSpace(r.Header.Get(SessionHeader)); id != "" {
		return id, nil // the kernel checks it is a valid id
	}
	if user != "" {
		sum := sha256.Sum256([]byte("gatehouse openai user\x00" + user))
		return userSessionPrefix + hex.EncodeToString(sum[:16]), nil
	}
	return "", gh.Errorf(gh.CodeInvalid, "say which conversation this is: send the header %s: <id> (one id per conversation), or the user field", SessionHeader)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
