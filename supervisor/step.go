package supervisor

import (
	"context"
	"strings"
	"sync/atomic"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/kernel"
)

// stepNow is what an attempt is doing, set where it starts a model call
// or a tool batch and read by its lease renewals, which record it on the
// run (kernel.RenewStep): a step that does not change is a stuck turn.
type stepNow struct{ v atomic.Pointer[kernel.Step] }

func (s *stepNow) set(name string) { s.v.Store(&kernel.Step{Name: name, Started: time.Now()}) }

func (s *stepNow) get() kernel.Step {
	if p := s.v.Load(); p != nil {
		return *p
	}
	return kernel.Step{}
}

type stepKey struct{}

func withStep(ctx context.Context, s *stepNow) context.Context {
	return context.WithValue(ctx, stepKey{}, s)
}

// markStep records the attempt's new step, when ctx carries its tracker.
func markStep(ctx context.Context, name string) {
	if s, ok := ctx.Value(stepKey{}).(*stepNow); ok {
		s.set(name)
	}
}

// toolStep names a tool batch's step: "tool:" and its tools.
func toolStep(calls []gh.ToolCall) string {
	names := make([]string, 0, len(calls))
	for _, c := range calls {
		names = append(names, c.Name)
	}
	return "tool:" + strings.Join(names, ",")
}
