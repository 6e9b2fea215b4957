package httpapi

import (
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"

	gh "github.com/gatehouse/gatehouse"
)

// decodeBody reads one JSON object of at most MaxBodyBytes into dst.
// Unknown fields, malformed JSON and trailing data are invalid; an empty
// body is invalid unless optional.
func (s *Server) decodeBody(w http.ResponseWriter, r *http.Request, dst any, optional bool) error {
	r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyBytes)
	dec := json.NewDecoder(r.Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		if errors.Is(err, io.EOF) && optional {
			return nil
		}
		return s.bodyError(err)
	}
	var extra json.RawMessage
	if err := dec.Decode(&extra); !errors.Is(err, io.EOF) {
		if err == nil {
			return gh.Errorf(gh.CodeInvalid, "body must hold exactly one JSON object")
		}
		return s.bodyError(err)
	}
	return nil
}

func (s *Server) bodyError(err error) error {
	var tooLarge *http.MaxBytesError
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &tooLarge):
		return gh.Wrap(gh.CodePayloadTooLarge, err, "body is over the limit of %d bytes", tooLarge.Limit)
	case isTimeout(err):
		return gh.Wrap(gh.CodeInvalid, err, "the body did not arrive within the read timeout of %s", s.cfg.ReadTimeout)
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

// querySeq parses a non-negative integer query parameter; def when absent.
func querySeq(r *http.Request, name string, def int64) (int64, error) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	return parseSeq(name, v)
}

func parseSeq(name, v string) (int64, error) {
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	if err != nil || n < 0 {
		return 0, gh.Errorf(gh.CodeInvalid, "%s must be a non-negative integer, not %q", name, v)
	}
	return n, nil
}

// queryLimit parses limit in [1, max]; def when absent.
func queryLimit(r *http.Request, def, max int) (int, error) {
	v := r.URL.Query().Get("limit")
	if v == "" {
		return def, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 1 || n > max {
		return 0, gh.Errorf(gh.CodeInvalid, "limit must be an integer from 1 to %d, not %q", max, v)
	}
	return n, nil
}
