package supervisor

import (
	"context"

	"github.com/gatehouse/gatehouse/models"
)

// Diagnoser asks the configured model about a stuck turn, for an
// incident's Diagnose (incidents.Config.Diagnose): one call outside any
// run, so it never waits for the stuck run's lease. nil without a model.
func Diagnoser(reg *models.Registry) func(context.Context, string) (string, error) {
	if len(reg.Selection()) == 0 {
		return nil
	}
	return func(ctx context.Context, prompt string) (string, error) {
		resp, _, err := reg.Call(ctx, nil, models.Request{Messages: []models.Message{{Role: models.RoleUser, Text: prompt}}}, nil)
		return resp.Text, err
	}
}
