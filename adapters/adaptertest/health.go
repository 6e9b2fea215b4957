package adaptertest

import (
	"context"
	"sync"
	"time"
)

// HealthReport is one Sink.Health call an adapter made.
type HealthReport struct {
	Platform string
	Err      error
	At       time.Time
}

// HealthLog records what an adapter reported through Sink.Health: embed
// it in a test sink to see whether the adapter told the truth about the
// platform (a failing poll reported as a failure, a recovery as a
// success).
type HealthLog struct {
	mu      sync.Mutex
	reports []HealthReport
}

// Health records one report (chat.Sink).
func (h *HealthLog) Health(_ context.Context, platform string, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.reports = append(h.reports, HealthReport{Platform: platform, Err: err, At: time.Now()})
}

// Reports returns every report so far.
func (h *HealthLog) Reports() []HealthReport {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]HealthReport(nil), h.reports...)
}

// Last returns the newest report.
func (h *HealthLog) Last() (HealthReport, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.reports) == 0 {
		return HealthReport{}, false
	}
	return h.reports[len(h.reports)-1], true
}
