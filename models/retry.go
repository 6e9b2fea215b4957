package models

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// classifyStatus maps an HTTP status of a failed provider call to an *Error.
// This is the one place of the retry rule (see the package documentation).
func classifyStatus(status int, header http.Header, detail string, err error) *Error {
	e := &Error{Message: "HTTP " + strconv.Itoa(status), Err: err}
	if detail != "" {
		e.Message += ": " + detail
	}
	switch {
	case status == http.StatusTooManyRequests:
		e.Code, e.Retryable = CodeRateLimited, true
		e.RetryAfter = parseRetryAfter(header, time.Now())
	case status == http.StatusRequestTimeout:
		e.Code, e.Retryable = CodeTimeout, true
	case status == http.StatusUnauthorized || status == http.StatusForbidden:
		e.Code = CodeUnauthorized
	case status == http.StatusNotFound:
		e.Code = CodeNotFound
	case status >= 400 && status < 500:
		e.Code = CodeBadRequest
	case status == 500, status == 502, status == 503, status == 504, status == 529:
		e.Code, e.Retryable = CodeServerError, true
	case status >= 500:
		e.Code = CodeServerError
	default:
		e.Code = CodeBadResponse
	}
	return e
}

// parseRetryAfter reads Retry-After (delay-seconds or an HTTP date) and the
// retry-after-ms extension some providers send. It returns 0 if absent.
func parseRetryAfter(h http.Header, now time.Time) time.Duration {
	if h == nil {
		return 0
	}
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil {
		if secs <= 0 {
			return 0
		}
		return time.Duration(secs * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

// classifyTransport maps an error that is not an HTTP status (network,
// decoding) to an *Error. Context errors are settled by the registry.
func classifyTransport(err error) *Error {
	var me *Error
	if errors.As(err, &me) {
		return me
	}
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.As(err, &syn), errors.As(err, &typ), errors.Is(err, bufio.ErrTooLong):
		return newError(CodeBadResponse, false, err, "unparseable stream")
	case errors.Is(err, context.DeadlineExceeded):
		return newError(CodeTimeout, true, err, "request timed out")
	case errors.Is(err, context.Canceled):
		return newError(CodeCanceled, false, err, "request canceled")
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return newError(CodeUnreachable, true, err, "connection closed")
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return newError(CodeUnreachable, true, err, "network error")
	}
	return newError(CodeUnknown, false, err, "provider call failed")
}

// backoff is the wait before attempt n+1 (n ≥ 1): base·2^(n-1) plus up to a
// quarter of it as jitter, and never less than the server's Retry-After.
func backoff(base time.Duration, n int, retryAfter time.Duration) time.Duration {
	d := base
	for i := 1; i < n && d < time.Minute; i++ {
		d *= 2
	}
	if q := int64(d / 4); q > 0 {
		d += time.Duration(rand.Int64N(q + 1))
	}
	if d < retryAfter {
		d = retryAfter
	}
	return d
}

// sleep waits d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
