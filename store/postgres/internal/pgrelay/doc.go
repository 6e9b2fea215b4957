// Package pgrelay owns how a commit on one replica reaches the live
// streams of another without a read: which sessions this replica follows
// (rows in stream_followers, refreshed while it lives, expiring when it
// dies), the NOTIFY payload a commit sends when another replica follows
// its session (the events, or only the session when they do not fit in a
// notification), and its decoding on the receiving side.
package pgrelay
