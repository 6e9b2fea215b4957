package kernel

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
)

// NewOwner names this process on leases and claims when its configuration
// names none: host, pid and a random part, so two processes on one host,
// or one restarted with the same pid, never share a name.
func NewOwner() string {
	host, _ := os.Hostname()
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}
