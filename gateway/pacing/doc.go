// Package pacing keeps one chat platform's sends inside its rate limits:
// per chat, per group chat per minute, and overall, a little under what
// the platform states, and a chat the platform answered 429 waits out its
// Retry-After. It only answers "send now, or wait this long"; the
// gateway's dispatcher does the waiting and the sending.
package pacing
