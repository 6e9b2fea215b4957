package wire

import "slices"

// Command is a global application command as the fake keeps it after a
// bulk overwrite.
type Command struct {
	ID, Version      string
	Name             string
	Description      string
	DMPermission     *bool
	Contexts         *[]int
	IntegrationTypes *[]int
	// Options are the command's STRING options, as registered.
	Options []Option
}

// Option is a registered STRING option of a command.
type Option struct {
	Name, Description string
	Required          bool
	// Choices are its fixed values; empty when any text goes.
	Choices []string
}

// JSON is the command as Discord returns it.
func (c *Command) JSON(appID string) map[string]any {
	j := map[string]any{
		"id": c.ID, "application_id": appID, "version": c.Version, "type": 1,
		"name": c.Name, "description": c.Description, "default_member_permissions": nil,
		"dm_permission": c.DMPermission == nil || *c.DMPermission, "nsfw": false,
		"integration_types": []int{0}, "contexts": nil,
	}
	if c.IntegrationTypes != nil {
		j["integration_types"] = *c.IntegrationTypes
	}
	if c.Contexts != nil {
		j["contexts"] = *c.Contexts
	}
	if len(c.Options) > 0 {
		opts := make([]map[string]any, 0, len(c.Options))
		for _, o := range c.Options {
			oj := map[string]any{"type": 3, "name": o.Name, "description": o.Description, "required": o.Required}
			if len(o.Choices) > 0 {
				var chs []map[string]any
				for _, v := range o.Choices {
					chs = append(chs, map[string]any{"name": v, "value": v})
				}
				oj["choices"] = chs
			}
			opts = append(opts, oj)
		}
		j["options"] = opts
	}
	return j
}

// UsableIn reports whether the command can be invoked in a DM with the
// bot (dm) or a guild channel: a DM needs dm_permission (not false)
// and, when contexts are set, context 1 (BOT_DM); a guild channel needs
// context 0.
func (c *Command) UsableIn(dm bool) bool {
	want := 0
	if dm {
		if c.DMPermission != nil && !*c.DMPermission {
			return false
		}
		want = 1
	}
	return c.Contexts == nil || slices.Contains(*c.Contexts, want)
}
