//go:build !unix

package httpapi

// openFileLimit is unknown off Unix: the connection cap is taken as set.
func openFileLimit() uint64 { return 0 }
