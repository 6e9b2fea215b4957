package gatestest

import (
	"sync"
	"testing"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gates"
)

// testTwoPersonRule: a service whose gates need two people's approvals
// (gates.Config.Needed). One approval leaves the gate pending, logged as
// gate.approval and listed on the gate; the same person again counts
// once; a second person decides, through the one compare-and-set; 50
// concurrent presses by two people give one decision; one deny denies;
// a gate that expires at 1 of 2 is expired.
func testTwoPersonRule(t *testing.T, h Harness) {
	f := NewFixture(t, h)
	svc := gates.NewService(gates.Config{Registry: f.Registry, Kernel: f.Kernel, Store: f.Store, Now: f.Clock.Now,
		Needed: func(tool string) int { return 2 }})
	alice := gh.Decision{State: gh.GateApproved, By: "alice", Person: "telegram:alice", Surface: "telegram"}
	bob := gh.Decision{State: gh.GateApproved, By: "bob", Person: "slack:bob", Surface: "slack"}

	// Gates open before any is decided (OpenGate claims their runs).
	g, g2, g3, g4 := f.OpenGate("g1", GateSpec{}), f.OpenGate("g2", GateSpec{}), f.OpenGate("g3", GateSpec{}), f.OpenGate("g4", GateSpec{TTL: time.Minute})
	for i := range 2 {
		got, won, err := svc.Decide(f.Ctx, g.ID, alice)
		if err != nil || won || got.State != gh.GatePending || len(got.Approvals) != 1 || got.Approvals[0].Person != alice.Person || got.Approvals[0].Needed != 2 {
			t.Fatalf("alice's approval %d: %+v won=%v %v", i+1, got, won, err)
		}
	}
	if ds := f.Decided(g); len(ds) != 0 {
		t.Fatalf("one approval of two logged a decision: %+v", ds)
	}
	approvals := 0
	evs, _ := f.Kernel.Events(f.Ctx, g.SessionID, 0, 1000)
	for _, e := range evs {
		if e.Kind == gh.KindGateApproval {
			approvals++
		}
	}
	if approvals != 1 {
		t.Fatalf("%d gate.approval events, want 1 (the same person twice counts once)", approvals)
	}
	if got := f.Get(g.ID); got.State != gh.GatePending || len(got.Approvals) != 1 {
		t.Fatalf("the gate after one approval: %+v", got)
	}
	got, won, err := svc.DecideRead(f.Ctx, f.Get(g.ID), bob)
	if err != nil || !won || got.State != gh.GateApproved || got.DecidedBy != "bob" {
		t.Fatalf("bob's approval: %+v won=%v %v", got, won, err)
	}
	f.OneDecision(g, gh.Decision{State: bob.State, By: bob.By, Surface: bob.Surface})

	// 50 presses at once by two people, from nothing: one decision.
	var wg sync.WaitGroup
	var mu sync.Mutex
	wins := 0
	for i := range 50 {
		wg.Go(func() {
			d := []gh.Decision{alice, bob}[i%2]
			got, won, err := svc.Decide(f.Ctx, g2.ID, d)
			if err != nil {
				t.Errorf("press %d: %v", i, err)
				return
			}
			if won {
				mu.Lock()
				wins++
				mu.Unlock()
			}
			if got.State != gh.GatePending && got.State != gh.GateApproved {
				t.Errorf("press %d: %+v", i, got)
			}
		})
	}
	wg.Wait()
	// The same person's identical presses may each hear they won (they
	// made the same decision); the decision itself is one.
	if wins < 1 {
		t.Fatal("no press won")
	}
	if got := f.Get(g2.ID); got.State != gh.GateApproved || len(f.Decided(g2)) != 1 {
		t.Fatalf("after 50 presses: %+v, %d decisions", got, len(f.Decided(g2)))
	}

	// One deny denies, whatever was approved.
	if got, _, err := svc.Decide(f.Ctx, g3.ID, alice); err != nil || got.State != gh.GatePending {
		t.Fatalf("alice on g3: %+v %v", got, err)
	}
	deny := gh.Decision{State: gh.GateDenied, By: "bob", Person: "slack:bob", Surface: "slack"}
	if got, won, err := svc.Decide(f.Ctx, g3.ID, deny); err != nil || !won || got.State != gh.GateDenied {
		t.Fatalf("bob's deny: %+v won=%v %v", got, won, err)
	}

	// Expiry at 1 of 2 is expired, never approved.
	if got, _, err := svc.Decide(f.Ctx, g4.ID, alice); err != nil || got.State != gh.GatePending {
		t.Fatalf("alice on g4: %+v %v", got, err)
	}
	f.Clock.Advance(2 * time.Minute)
	if err := svc.SweepOnce(f.Ctx); err != nil {
		t.Fatal(err)
	}
	if got := f.Get(g4.ID); got.State != gh.GateExpired {
		t.Fatalf("g4 at its timeout with 1 of 2: %+v", got)
	}
	// A press after the expiry approves nothing.
	if got, won, _ := svc.Decide(f.Ctx, g4.ID, bob); won || got.State != gh.GateExpired {
		t.Fatalf("bob after the expiry: %+v won=%v", got, won)
	}
}
