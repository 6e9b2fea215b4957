// Package ratelimit is the fake Discord's rate limiter: per-bucket and
// global limits announced in Discord's X-RateLimit-* headers, and 429
// answers with retry_after. Its caller holds the lock around it.
package ratelimit

import (
	"hash/fnv"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Limiter limits PerBucket requests per Window in each bucket and
// GlobalPerSecond requests overall; zero disables a limit.
type Limiter struct {
	PerBucket       int
	Window          time.Duration
	GlobalPerSecond int
	// Force429 makes the next request limited for that long.
	Force429 time.Duration

	buckets map[string]*bucket
	global  bucket
}

type bucket struct {
	start time.Time
	count int
}

// Allow counts a request in bucket at now and sets the X-RateLimit-*
// headers on h. Over a limit it returns how long to wait, whether the
// global limit was hit, and false: the caller answers with 429 (Body).
func (l *Limiter) Allow(h http.Header, name string, now time.Time) (retry time.Duration, global, ok bool) {
	tooMany := func(retry time.Duration, global bool) (time.Duration, bool, bool) {
		secs := math.Ceil(retry.Seconds()*1000) / 1000
		h.Set("Retry-After", strconv.Itoa(int(math.Ceil(retry.Seconds()))))
		h.Set("X-RateLimit-Reset-After", strconv.FormatFloat(secs, 'f', 3, 64))
		h.Set("X-RateLimit-Reset", strconv.FormatFloat(float64(now.Add(retry).UnixMilli())/1000, 'f', 3, 64))
		if global {
			h.Set("X-RateLimit-Global", "true")
			h.Set("X-RateLimit-Scope", "global")
		} else {
			h.Set("X-RateLimit-Scope", "user")
			h.Set("X-RateLimit-Remaining", "0")
		}
		return retry, global, false
	}
	if l.Force429 > 0 {
		d := l.Force429
		l.Force429 = 0
		h.Set("X-RateLimit-Bucket", hash(name))
		h.Set("X-RateLimit-Limit", "5")
		return tooMany(d, false)
	}
	if n := l.GlobalPerSecond; n > 0 {
		if now.Sub(l.global.start) >= time.Second {
			l.global = bucket{start: now}
		}
		if l.global.count >= n {
			return tooMany(l.global.start.Add(time.Second).Sub(now), true)
		}
		l.global.count++
	}
	n := l.PerBucket
	if n <= 0 {
		return 0, false, true
	}
	if l.buckets == nil {
		l.buckets = map[string]*bucket{}
	}
	b, found := l.buckets[name]
	if !found || now.Sub(b.start) >= l.Window {
		b = &bucket{start: now}
		l.buckets[name] = b
	}
	reset := b.start.Add(l.Window)
	h.Set("X-RateLimit-Bucket", hash(name))
	h.Set("X-RateLimit-Limit", strconv.Itoa(n))
	if b.count >= n {
		return tooMany(reset.Sub(now), false)
	}
	b.count++
	h.Set("X-RateLimit-Remaining", strconv.Itoa(n-b.count))
	h.Set("X-RateLimit-Reset", strconv.FormatFloat(float64(reset.UnixMilli())/1000, 'f', 3, 64))
	h.Set("X-RateLimit-Reset-After", strconv.FormatFloat(reset.Sub(now).Seconds(), 'f', 3, 64))
	return 0, false, true
}

// Body is the 429's JSON body.
func Body(retry time.Duration, global bool) map[string]any {
	secs := math.Ceil(retry.Seconds()*1000) / 1000
	return map[string]any{"message": "You are being rate limited.", "retry_after": secs, "global": global}
}

// hash is the bucket id Discord announces: one per route kind
// ("create", "edit"), whatever the channel.
func hash(name string) string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(strings.SplitN(name, ":", 2)[0]))
	return strconv.FormatUint(h.Sum64(), 16)
}
