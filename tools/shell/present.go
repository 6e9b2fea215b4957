package shell

import (
	"encoding/json"
	"fmt"

	gh "github.com/gatehouse/gatehouse"
)

// Present implements tools.Presenter: the command line, whole (it is
// never free text: every character of it runs).
func (t *Tool) Present(args json.RawMessage) ([]gh.CardField, error) {
	var a struct {
		Command string `json:"command"`
	}
	if err := json.Unmarshal(args, &a); err != nil {
		return nil, fmt.Errorf("shell_exec: bad arguments: %v", err)
	}
	return []gh.CardField{{Label: "Command", Value: a.Command}}, nil
}
