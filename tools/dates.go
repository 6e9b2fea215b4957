package tools

import (
	"context"
	"encoding/json"
)

// CheckDates is the generic commitment check of a tool's schema. (Stub:
// replaced by the date resolver.)
func CheckDates(ctx context.Context, schema json.RawMessage, call Call) (Verdict, error) {
	return Verdict{Kind: Allow}, nil
}
