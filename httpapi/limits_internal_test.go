package httpapi

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// With too few open files for the cap, Start lowers it and says so, naming
// how to raise the limit or set the cap. (How far it is lowered is
// connlimit.Fit's, tested there.)
func TestConnectionCapFitsTheFileLimit(t *testing.T) {
	var log bytes.Buffer
	s := New(Config{MaxConns: 16384, Logger: slog.New(slog.NewTextHandler(&log, nil))})
	s.fitToFileLimit(1024)
	if s.cfg.MaxConns >= 16384 || !strings.Contains(log.String(), "lowered the cap") || !strings.Contains(log.String(), "GATEHOUSE_HTTP_MAX_CONNS") {
		t.Fatalf("cap %d after a 1024-file limit; log:\n%s", s.cfg.MaxConns, log.String())
	}
}
