package platformfake

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
)

// ParamOptions say how much of a body ReadParams reads and which
// encodings the platform takes besides a query, a form and JSON.
type ParamOptions struct {
	// MaxBody is how many bytes of the body are read.
	MaxBody int64
	// Multipart takes multipart/form-data bodies (file parts refused).
	Multipart bool
}

// ReadParams reads a call's parameters, each as text, the ways Web APIs
// take them: the query string, then a url-encoded, JSON or (with
// o.Multipart) multipart body. Of a JSON body, strings are unquoted,
// nulls left out and other values kept as their JSON text, as a form
// would carry them. An empty body adds nothing, whatever its type.
func ReadParams(r *http.Request, o ParamOptions) (map[string]string, error) {
	p := map[string]string{}
	for k, v := range r.URL.Query() {
		p[k] = v[0]
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, o.MaxBody))
	if err != nil {
		return nil, fmt.Errorf("unreadable body: %w", err)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		// getMe and friends: a content type with nothing in it.
		return p, nil
	}
	ct, ctParams, _ := mime.ParseMediaType(r.Header.Get("Content-Type"))
	switch {
	case ct == "multipart/form-data" && o.Multipart:
		mr := multipart.NewReader(bytes.NewReader(body), ctParams["boundary"])
		for {
			part, err := mr.NextPart()
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, fmt.Errorf("bad multipart body: %w", err)
			}
			if part.FileName() != "" {
				return nil, errors.New("file uploads are not modelled by the fake")
			}
			v, err := io.ReadAll(part)
			if err != nil {
				return nil, fmt.Errorf("bad multipart body: %w", err)
			}
			p[part.FormName()] = string(v)
		}
	case ct == "application/x-www-form-urlencoded":
		vals, err := url.ParseQuery(string(body))
		if err != nil {
			return nil, fmt.Errorf("bad form body: %w", err)
		}
		for k, v := range vals {
			p[k] = v[0]
		}
	case ct == "application/json":
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(body, &obj); err != nil {
			return nil, fmt.Errorf("bad JSON body: %w", err)
		}
		for k, raw := range obj {
			var s string
			switch {
			case string(raw) == "null":
				continue
			case json.Unmarshal(raw, &s) == nil:
				p[k] = s
			default:
				p[k] = string(raw)
			}
		}
	default:
		return nil, fmt.Errorf("unsupported content type %q", ct)
	}
	return p, nil
}
