package connlimit

import (
	"log/slog"
	"sync/atomic"
	"time"
)

// RateLog logs a repeated event at most once per interval, with how many
// happened since the last line: a flood of refusals at a cap would
// otherwise write a log line per refusal. The zero value is ready.
type RateLog struct {
	last atomic.Int64 // unix nanoseconds of the last line
	n    atomic.Int64
}

const rateLogEvery = 10 * time.Second

// Warn counts one event and logs msg with args at warning level, unless a
// line was logged within the interval.
func (l *RateLog) Warn(log *slog.Logger, msg string, args ...any) {
	l.n.Add(1)
	now := time.Now().UnixNano()
	last := l.last.Load()
	if now-last < int64(rateLogEvery) || !l.last.CompareAndSwap(last, now) {
		return
	}
	log.Warn(msg, append(args, "count", l.n.Swap(0), "per", rateLogEvery)...)
}
