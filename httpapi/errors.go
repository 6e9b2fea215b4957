package httpapi

import (
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"

	gh "github.com/gatehouse/gatehouse"
)

// statusOf maps an error code to its HTTP status. It is the only place
// that does.
func statusOf(code gh.Code) int {
	switch code {
	case gh.CodeInvalid, gh.CodeInvalidPayload, gh.CodeUnknownKind:
		return http.StatusBadRequest
	case gh.CodeUnauthorized:
		return http.StatusUnauthorized
	case gh.CodeExternalSession:
		return http.StatusForbidden
	case gh.CodeUnknownSession, gh.CodeNotFound, gh.CodeUnknownPairingCode:
		return http.StatusNotFound
	case gh.CodePairingCodeExpired:
		return http.StatusGone
	case gh.CodeIdempotencyConflict, gh.CodeConflict, gh.CodeStaleEpoch, gh.CodeLeaseLost:
		return http.StatusConflict
	case gh.CodePayloadTooLarge:
		return http.StatusRequestEntityTooLarge
	case gh.CodeUnavailable:
		return http.StatusServiceUnavailable
	default:
		return http.StatusInternalServerError
	}
}

// errMethodNotAllowed marks a known path asked with the wrong method: code
// invalid, answered 405 rather than 400.
var errMethodNotAllowed = errors.New("method not allowed")

type errorBody struct {
	Code    gh.Code `json:"code"`
	Message string  `json:"message"`
}

// writeError answers err as JSON {code, message} and logs it once: server
// faults as errors, client mistakes at debug level.
func writeError(w http.ResponseWriter, r *http.Request, log *slog.Logger, err error) {
	code := gh.ErrorCode(err)
	status := statusOf(code)
	if errors.Is(err, errMethodNotAllowed) {
		status = http.StatusMethodNotAllowed
	}
	msg := gh.ErrorMessage(err)
	if status >= 500 {
		log.Error("request failed", "method", r.Method, "path", r.URL.Path, "code", code, "err", err)
		if code == gh.CodeInternal {
			msg = "internal error"
		}
	} else {
		log.Debug("request refused", "method", r.Method, "path", r.URL.Path, "code", code, "err", err)
	}
	writeJSON(w, status, errorBody{Code: code, Message: msg})
}

// ErrorWriter answers errors as every endpoint does, for handlers mounted
// from outside (Config.Knowledge).
func ErrorWriter(log *slog.Logger) func(http.ResponseWriter, *http.Request, error) {
	return func(w http.ResponseWriter, r *http.Request, err error) { writeError(w, r, log, err) }
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
