package kernel

import (
	"testing"

	gh "github.com/gatehouse/gatehouse"
)

// A subscription holds what was published since its last Take, and says
// when that is not all: a commit that only signalled, or more than it
// holds.
func TestSubscriptionTake(t *testing.T) {
	f := &feed{}
	s := f.add("s1", true)
	all := f.add(allSessions, true)
	f.notify("s1", []gh.Event{{Seq: 1}, {Seq: 2}})
	f.notify("s2", []gh.Event{{Seq: 9}})
	if evs, complete := s.Take(); !complete || len(evs) != 2 || evs[1].Seq != 2 {
		t.Fatalf("published: %+v %v", evs, complete)
	}
	if evs, complete := s.Take(); !complete || len(evs) != 0 {
		t.Fatalf("nothing new: %+v %v", evs, complete)
	}
	f.notify("s1", []gh.Event{{Seq: 3}})
	f.notify("s1", nil) // signalled only
	if _, complete := s.Take(); complete {
		t.Fatal("a commit that only signalled must make the subscriber read")
	}
	big := make([]gh.Event, maxPending+1)
	f.notify("s1", big)
	if evs, complete := s.Take(); complete || len(evs) != 0 {
		t.Fatalf("overflow must drop the events and make the subscriber read: %d %v", len(evs), complete)
	}
	select {
	case <-all.Committed:
	default:
		t.Fatal("SubscribeAll was not signalled")
	}
	s.Close()
	all.Close()
	if len(f.subs) != 0 {
		t.Fatalf("closed subscriptions left behind: %v", f.subs)
	}
}

// Big payloads count too: a slow subscriber never holds more than
// maxPendingBytes of them.
func TestSubscriptionTakeBoundsBytes(t *testing.T) {
	f := &feed{}
	s := f.add("s1", true)
	defer s.Close()
	f.notify("s1", []gh.Event{{Seq: 1, Payload: make([]byte, maxPendingBytes/2)}})
	f.notify("s1", []gh.Event{{Seq: 2, Payload: make([]byte, maxPendingBytes/2+1)}})
	if evs, complete := s.Take(); complete || len(evs) != 0 {
		t.Fatalf("over the byte bound: %d events, complete %v", len(evs), complete)
	}
	f.notify("s1", []gh.Event{{Seq: 3, Payload: []byte(`{}`)}})
	if evs, complete := s.Take(); !complete || len(evs) != 1 {
		t.Fatalf("after a Take the bound starts again: %d %v", len(evs), complete)
	}
}
