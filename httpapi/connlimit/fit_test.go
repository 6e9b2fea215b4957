package connlimit

import "testing"

// With too few open files for the cap, Fit lowers it (keeping the
// headroom free); with enough, it leaves the cap alone.
func TestConnectionCapFitsTheFileLimit(t *testing.T) {
	for _, c := range []struct {
		name                    string
		maxConns, reserve, room int
		limit                   uint64
		wantMax, wantReserve    int
		wantOK                  bool
	}{
		{"unknown limit", 16384, 64, 256, 0, 16384, 64, true},
		{"plenty", 16384, 64, 296, 1 << 20, 16384, 64, true},
		{"exactly enough", 1000, 24, 1000, 2024, 1000, 24, true},
		{"low limit", 16384, 64, 296, 1024, 664, 64, false},
		{"reserve shrinks to a quarter", 16384, 64, 296, 400, 78, 26, false},
		{"hopeless limit", 16384, 64, 296, 100, minConns, 1, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, r, ok := Fit(c.maxConns, c.reserve, c.room, c.limit)
			if m != c.wantMax || r != c.wantReserve || ok != c.wantOK {
				t.Fatalf("Fit = %d, %d, %v; want %d, %d, %v", m, r, ok, c.wantMax, c.wantReserve, c.wantOK)
			}
			if ok || c.limit <= uint64(c.room+minConns+1) {
				return
			}
			if uint64(m+r+c.room) > c.limit {
				t.Fatalf("%d conns + %d reserve + %d headroom exceed the limit %d", m, r, c.room, c.limit)
			}
		})
	}
}
