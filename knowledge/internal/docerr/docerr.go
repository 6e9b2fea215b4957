// Package docerr holds the knowledge library's bad-input sentinels that
// its internal readers return too (package knowledge re-exports them as
// ErrTooLarge and ErrBroken), so errors.Is finds the same value on
// either side.
package docerr

import "errors"

var (
	// TooLarge: the file, or what it unpacks to, is over a bound.
	TooLarge = errors.New("document too large")
	// Broken: the file does not parse as its format.
	Broken = errors.New("broken document")
)
