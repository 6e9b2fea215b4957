// Package pgrelay owns how a commit on one replica reaches the live
// streams of another without a read: whether this replica streams any
// session (one row per replica in stream_followers, written when its
// first stream opens, refreshed while it streams, expiring when it dies —
// opening and closing a stream writes nothing), the NOTIFY payload a
// commit sends when another replica streams (the events, or only the
// session when they do not fit in a notification), and its decoding on
// the receiving side, which keeps what its own streams follow.
package pgrelay
