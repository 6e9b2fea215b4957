package store

import (
	"context"
	"time"

	gh "github.com/gatehouse/gatehouse"
)

// IncidentsReader finds stuck turns and the incidents opened for them
// (package incidents), and the other cards opened outside a run (package
// gateway/uploads).
type IncidentsReader interface {
	// StuckRuns returns running runs whose recorded step started at or
	// before before, oldest step first, at most limit. A run waiting for
	// a person is not running, so it never counts.
	StuckRuns(ctx context.Context, before time.Time, limit int) ([]gh.Run, error)
	// GatesOfKind returns the gates of a kind opened outside a run
	// (gh.GateKindIncident, gh.GateKindLibrary), newest first, in one
	// state when state is set, at most limit.
	GatesOfKind(ctx context.Context, kind string, state gh.GateState, limit int) ([]gh.Gate, error)
}
