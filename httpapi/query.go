package httpapi

import (
	"net/http"
	"strconv"
	"strings"

	gh "github.com/gatehouse/gatehouse"
)

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
