package sse

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/kernel"
)

// A committed event carries its seq as the id; partials carry none; pings
// are comments; DrainPartials writes what waits and does not block.
func TestFrames(t *testing.T) {
	var buf bytes.Buffer
	bw := bufio.NewWriter(&buf)
	if err := WriteEvent(bw, gh.Event{Seq: 7, Kind: gh.KindUserMessage, Payload: json.RawMessage(`{"text":"hi"}`)}); err != nil {
		t.Fatal(err)
	}
	ch := make(chan kernel.Partial, 2)
	ch <- kernel.Partial{}
	ch <- kernel.Partial{}
	if err := DrainPartials(bw, ch); err != nil {
		t.Fatal(err)
	}
	if err := WritePing(bw); err != nil {
		t.Fatal(err)
	}
	if err := bw.Flush(); err != nil {
		t.Fatal(err)
	}
	frames := strings.Split(strings.TrimSuffix(buf.String(), "\n\n"), "\n\n")
	if len(frames) != 4 {
		t.Fatalf("%d frames: %q", len(frames), buf.String())
	}
	if !strings.HasPrefix(frames[0], "id: 7\nevent: "+string(gh.KindUserMessage)+"\ndata: {") {
		t.Fatalf("event frame %q", frames[0])
	}
	for _, f := range frames[1:3] {
		if !strings.HasPrefix(f, "event: partial\ndata: {") || strings.Contains(f, "id:") {
			t.Fatalf("partial frame %q", f)
		}
	}
	if frames[3] != ": ping" {
		t.Fatalf("ping frame %q", frames[3])
	}
}
