package reqbody

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/httpapi/connlimit"
)

// Limits bound a request body.
type Limits struct {
	// MaxBytes bounds a body's size.
	MaxBytes int64
	// ReadTimeout is the read deadline the server set on the body
	// (connlimit.SetDeadlines); errors name it when a body is cut there.
	ReadTimeout time.Duration
}

// Decode reads one JSON object of at most MaxBytes into dst. Unknown
// fields, malformed JSON and trailing data are invalid; an empty body is
// invalid unless optional.
func (l Limits) Decode(w http.ResponseWriter, r *http.Request, dst any, optional bool) error {
	r.Body = http.MaxBytesReader(w, r.Body, l.MaxBytes)
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		if errors.Is(err, io.EOF) && optional {
			return nil
		}
		return l.Error(err)
	}
	var extra json.RawMessage
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err == nil {
			return gh.Errorf(gh.CodeInvalid, "body must hold exactly one JSON object")
		}
		return l.Error(err)
	}
	return nil
}

// ReadAll reads the whole body, at most MaxBytes. A body over the limit
// or cut at the read deadline gets the same typed error as in Decode;
// any other read failure is invalid.
func (l Limits) ReadAll(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, l.MaxBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) || connlimit.IsTimeout(err) {
			return nil, l.Error(err)
		}
		return nil, gh.Wrap(gh.CodeInvalid, err, "the body could not be read")
	}
	return body, nil
}

// Error turns a failure to read or decode a body into a typed error that
// says what was wrong with it.
func (l Limits) Error(err error) error {
	var tooLarge *http.MaxBytesError
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &tooLarge):
		return gh.Wrap(gh.CodePayloadTooLarge, err, "body is over the limit of %d bytes", tooLarge.Limit)
	case connlimit.IsTimeout(err):
		return gh.Wrap(gh.CodeInvalid, err, "the body did not arrive within the read timeout of %s", l.ReadTimeout)
	case errors.Is(err, io.EOF):
		return gh.Errorf(gh.CodeInvalid, "body must be a JSON object; it is empty")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return gh.Wrap(gh.CodeInvalid, err, "malformed JSON: the body ends early")
	case errors.As(err, &syntax):
		return gh.Wrap(gh.CodeInvalid, err, "malformed JSON at byte %d: %s", syntax.Offset, syntax.Error())
	case errors.As(err, &typ):
		if typ.Field == "" {
			return gh.Wrap(gh.CodeInvalid, err, "body must be a JSON object, not %s", typ.Value)
		}
		return gh.Wrap(gh.CodeInvalid, err, "field %q must be %s, not %s", typ.Field, jsonType(typ.Type.Kind().String()), typ.Value)
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		// encoding/json has no typed error for this; its message names
		// the field.
		return gh.Wrap(gh.CodeInvalid, err, "unknown field %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
	default:
		return gh.Wrap(gh.CodeInvalid, err, "malformed JSON body")
	}
}

// jsonType names a Go kind as the JSON type a client should have sent.
func jsonType(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "slice", "array":
		return "an array"
	case "struct", "map":
		return "an object"
	case "bool":
		return "true or false"
	default:
		return "a number"
	}
}
