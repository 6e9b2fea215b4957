package people

import (
	"crypto/rand"
	"fmt"
	"strings"
	"time"
)

// Pairing lets people in without a restart. With gateway.Config.Pairing
// on, a stranger (not on the platform's allow-list, not let in before) who
// writes in a direct chat gets a one-time code as a reply, and their
// message is not handed on. An admin approves the code (Admin.Approve:
// /admin, the API, `gatehouse pair approve`), and from the next message on
// the person is allowed, until revoked. Who is let in lives in the database, read in
// each receive's transaction: a revocation holds for the next message on
// every replica.
//
// The code leaves through the outbox like every reply: its row commits in
// the receive's transaction, keyed by the session and minus the receive
// row's id (no event of the log stands behind it), and the dispatcher
// sends it at most once.

const (
	// PairingCodeTTL is how long a pairing code can be approved. A
	// stranger who writes after it passed gets a new code.
	PairingCodeTTL = time.Hour
	// PairingCodesPerHour is how many codes one sender is given in an
	// hour; a sender over it is dropped without a reply (the receive log
	// says why). One code is live per sender at a time in any case.
	PairingCodesPerHour = 3
	// pairingAlphabet has no 0/O, 1/I/L: a code read out loud or typed
	// from a phone comes out right.
	pairingAlphabet = "ABCDEFGHJKMNPQRSTUVWXYZ23456789"
	pairingCodeLen  = 8
)

// NewPairingCode draws a code: 8 characters of 31, about 40 bits. Bytes
// at or above the largest multiple of 31 are drawn again, so every
// character is equally likely.
func NewPairingCode() string {
	const limit = 256 / len(pairingAlphabet) * len(pairingAlphabet)
	out := make([]byte, 0, pairingCodeLen)
	var b [16]byte
	for len(out) < pairingCodeLen {
		_, _ = rand.Read(b[:])
		for _, c := range b {
			if int(c) < limit && len(out) < pairingCodeLen {
				out = append(out, pairingAlphabet[int(c)%len(pairingAlphabet)])
			}
		}
	}
	return string(out)
}

// NormalizeCode is a code as typed (any case, with spaces or dashes) as
// it is stored.
func NormalizeCode(s string) string {
	return strings.Map(func(r rune) rune {
		switch {
		case r == ' ' || r == '-' || r == '\t':
			return -1
		case r >= 'a' && r <= 'z':
			return r - 'a' + 'A'
		}
		return r
	}, s)
}

func validCode(code string) bool {
	if len(code) != pairingCodeLen {
		return false
	}
	for _, r := range code {
		if !strings.ContainsRune(pairingAlphabet, r) {
			return false
		}
	}
	return true
}

// PairingReply is what a stranger is sent with their code.
func PairingReply(code string) string {
	return "🔐 You are not on this assistant's list yet. To be let in, give this code to its admin: " + code +
		" (valid for " + ttlWords(PairingCodeTTL) + "). Once they approve it, write again. Until then your messages are not passed on."
}

func ttlWords(d time.Duration) string {
	switch {
	case d == time.Hour:
		return "an hour"
	case d%time.Hour == 0:
		return fmt.Sprintf("%d hours", d/time.Hour)
	case d%time.Minute == 0:
		return fmt.Sprintf("%d minutes", d/time.Minute)
	}
	return d.String()
}
