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
