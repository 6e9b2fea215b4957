//go:build !unix

package connlimit

// OpenFileLimit is unknown off Unix (0): the connection cap is taken as
// set.
func OpenFileLimit() uint64 { return 0 }
