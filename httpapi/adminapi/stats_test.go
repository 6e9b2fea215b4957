package adminapi

import (
	"testing"
	"time"

	"github.com/gatehouse/gatehouse/store"
)

// reply lists every bucket, sums the totals, and leaves out rows outside
// the window.
func TestReplyBuckets(t *testing.T) {
	since := time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)
	q := store.StatsQuery{Since: since, Until: since.Add(time.Hour), Step: time.Minute}
	r := reply("1h", q, store.Stats{
		Receives:     []store.StatsCount{{Bucket: 0, Key: "handed_on", Count: 2}, {Bucket: 59, Key: "dropped", Count: 1}, {Bucket: 60, Key: "dropped", Count: 9}, {Bucket: -1, Key: "dropped", Count: 9}},
		Turns:        []store.StatsCount{{Bucket: 3, Key: "done", Count: 4}},
		TurnP95:      []store.StatsValue{{Bucket: 3, Count: 4, Value: 1500}},
		GatesOpened:  []store.StatsCount{{Bucket: 3, Key: "approval", Count: 1}, {Bucket: 3, Key: "clarify", Count: 1}},
		GatesDecided: []store.StatsCount{{Bucket: 4, Key: "expired", Count: 1}},
		Spend:        []store.StatsValue{{Bucket: 3, Count: 2, Value: 0.5}},
	})
	if len(r.Buckets) != 60 || r.StepSeconds != 60 || !r.Buckets[59].Start.Equal(since.Add(59*time.Minute)) {
		t.Fatalf("%d buckets of %ds, last at %s", len(r.Buckets), r.StepSeconds, r.Buckets[len(r.Buckets)-1].Start)
	}
	if r.Totals.Receives["handed_on"] != 2 || r.Totals.Receives["dropped"] != 1 || r.Buckets[59].Receives["dropped"] != 1 {
		t.Errorf("receives: %v", r.Totals.Receives)
	}
	b := r.Buckets[3]
	if b.Turns["done"] != 4 || b.Turns["failed"] != 0 || b.TurnP95Ms != 1500 || b.GatesOpened != 2 || b.ModelCalls != 2 || b.SpendUSD != 0.5 {
		t.Errorf("bucket 3: %+v", b)
	}
	if r.Buckets[4].GatesDecided["expired"] != 1 || r.Buckets[4].GatesDecided["approved"] != 0 || r.Totals.GatesDecided["expired"] != 1 {
		t.Errorf("decided: %v", r.Buckets[4].GatesDecided)
	}
	if r.Buckets[0].TurnP95Ms != 0 || r.Buckets[0].Turns == nil {
		t.Errorf("an empty bucket: %+v", r.Buckets[0])
	}
}

func TestP95(t *testing.T) {
	for _, c := range []struct {
		in   []int64
		want int64
	}{{nil, 0}, {[]int64{7}, 7}, {[]int64{2, 4}, 4}, {[]int64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}, 19}} {
		if got := store.P95(c.in); got != c.want {
			t.Errorf("P95(%v) = %d, want %d", c.in, got, c.want)
		}
	}
}
