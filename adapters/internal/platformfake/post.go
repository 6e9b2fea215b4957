package platformfake

import (
	"bytes"
	"context"
	"io"
	"net/http"
)

// Post sends body to target as a platform's delivery does, with header,
// and returns the status the receiver answered: 0 when there was no
// answer. With drain false it does not read the answer's body (a handler
// that answers before it is done need not be waited for). err is set only
// when no request could be made of target.
func Post(ctx context.Context, client *http.Client, target string, body []byte, header http.Header, drain bool) (status int, err error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil
	}
	if drain {
		_, _ = io.Copy(io.Discard, resp.Body)
	}
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}
