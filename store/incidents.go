package store

import (
	"context"
	"time"

	gh "github.com/gatehouse/gatehouse"
)

// IncidentsReader finds stuck turns and the incidents opened for them
// (package incidents).
type IncidentsReader interface {
	// StuckRuns returns running runs whose recorded step started at or
	// before before, oldest step first, at most limit. A run waiting for
	// a person is not running, so it never counts.
	StuckRuns(ctx context.Context, before time.Time, limit int) ([]gh.Run, error)
	// IncidentGates returns the gates of kind incident, newest first, in
	// one state when state is set, at most limit.
	IncidentGates(ctx context.Context, state gh.GateState, limit int) ([]gh.Gate, error)
}
