package gatehouse

import (
	"errors"
	"fmt"
)

// Code classifies an error so that every surface can map it the same way
// (httpapi turns codes into HTTP statuses in one place).
type Code string

// Error codes. They are part of the API: clients match on them.
const (
	CodeInvalid             Code = "invalid"              // malformed request or argument
	CodeUnknownSession      Code = "unknown-session"      // no session with that id (for that tenant)
	CodeUnknownKind         Code = "unknown-kind"         // event kind not known, or not allowed on this path
	CodeInvalidPayload      Code = "invalid-payload"      // payload is not a JSON object
	CodePayloadTooLarge     Code = "payload-too-large"    // payload over the configured limit
	CodeIdempotencyConflict Code = "idempotency-conflict" // key reused with another payload
	CodeStaleEpoch          Code = "stale-epoch"          // a newer claim superseded this lease
	CodeLeaseLost           Code = "lease-lost"           // lease expired or the run was settled
	CodeNotFound            Code = "not-found"            // some other named thing does not exist
	CodeConflict            Code = "conflict"             // state does not allow the operation
	CodeUnknownPairingCode  Code = "unknown-pairing-code" // no pairing code like that was given (or it was used)
	CodePairingCodeExpired  Code = "pairing-code-expired" // the pairing code is past its expiry
	CodeUnauthorized        Code = "unauthorized"         // missing or wrong credentials
	CodeExternalSession     Code = "external-session"     // the session is a chat platform's: only its chat writes it
	CodeUnavailable         Code = "unavailable"          // a dependency is down; retry later
	CodeInternal            Code = "internal"             // a bug or an unexpected failure
)

// Error is the one error type of Gatehouse: a code, a message for people,
// and the cause it wraps.
type Error struct {
	Code    Code
	Message string
	Err     error
}

func (e *Error) Error() string {
	if e.Err != nil {
		return fmt.Sprintf("%s: %s: %v", e.Code, e.Message, e.Err)
	}
	return fmt.Sprintf("%s: %s", e.Code, e.Message)
}

func (e *Error) Unwrap() error { return e.Err }

// Errorf builds an *Error with a formatted message and no cause.
func Errorf(code Code, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...)}
}

// Wrap builds an *Error that wraps cause.
func Wrap(code Code, cause error, format string, args ...any) *Error {
	return &Error{Code: code, Message: fmt.Sprintf(format, args...), Err: cause}
}

// ErrorCode returns the code of the first *Error in err's chain, or
// CodeInternal when there is none (an error nobody classified is a bug).
func ErrorCode(err error) Code {
	if err == nil {
		return ""
	}
	var e *Error
	if errors.As(err, &e) {
		return e.Code
	}
	return CodeInternal
}

// ErrorMessage returns the message of the first *Error in err's chain, or
// err.Error() when there is none.
func ErrorMessage(err error) string {
	var e *Error
	if errors.As(err, &e) {
		return e.Message
	}
	return err.Error()
}

// IsCode reports whether err carries code.
func IsCode(err error, code Code) bool { return err != nil && ErrorCode(err) == code }
