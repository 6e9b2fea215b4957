package people_test

import (
	"testing"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gateway/people"
)

// ParseZone takes IANA names (in any case) and refuses what is none:
// paths, the server's Local, offsets, empty, over-long.
func TestParseZone(t *testing.T) {
	for in, want := range map[string]string{
		"Europe/Berlin": "Europe/Berlin", " UTC ": "UTC", "utc": "UTC", "america/new_york": "America/New_York",
		"Pacific/Kiritimati": "Pacific/Kiritimati", "Etc/GMT+5": "Etc/GMT+5",
	} {
		if loc, err := people.ParseZone(in); err != nil || loc.String() != want {
			t.Errorf("ParseZone(%q) = %v %v, want %s", in, loc, err, want)
		}
	}
	for _, in := range []string{"", "Local", "local", "../etc/passwd", "Europe/../../etc/passwd", "/usr/share/zoneinfo/UTC", "Europe/",
		"Europe//Berlin", "+02:00", "UTC+2", "Mars/Olympus_Mons", "Europe/Berlin\x00", "Éurope/Berlin", "Europe/Berlin " + string(make([]byte, 70))} {
		if loc, err := people.ParseZone(in); !gh.IsCode(err, gh.CodeInvalid) {
			t.Errorf("ParseZone(%q) = %v %v, want an invalid error", in, loc, err)
		}
	}
}
