package webfetch_test

import (
	"encoding/json"
	"testing"
)

// args is a copy of the helper in package tools' tests.
func args(t *testing.T, v any) json.RawMessage {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
