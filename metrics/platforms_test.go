package metrics

import (
	"testing"

	gh "github.com/gatehouse/gatehouse"
)

// The platforms these tests decide on, registered as their adapters do
// (gateway/chat.Register) in a binary that links them: the metrics
// package takes the surface label from the platform table, not a list.
func init() {
	for name, prefix := range map[string]string{gh.PlatformTelegram: "tg_", gh.PlatformDiscord: "dc_", gh.PlatformSlack: "sl_"} {
		if err := gh.RegisterSessionPrefix(name, prefix); err != nil {
			panic(err)
		}
	}
}

// A registered platform is its own label, a surface that is no platform
// keeps its name, anything else is folded into "other".
func TestSurfaceLabelFollowsThePlatformTable(t *testing.T) {
	for in, want := range map[string]string{"telegram": "telegram", "slack": "slack", "web": "web", "api": "api", "gateway": "gateway",
		"matrix": "other", "": "other"} {
		if got := surfaceLabel(in); got != want {
			t.Errorf("surfaceLabel(%q) = %q, want %q", in, got, want)
		}
	}
	if err := gh.RegisterSessionPrefix("matrix", "mx_"); err != nil {
		t.Fatal(err)
	}
	if got := surfaceLabel("matrix"); got != "matrix" {
		t.Errorf("a platform registered later is %q", got)
	}
}
