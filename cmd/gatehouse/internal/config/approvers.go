package config

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gateway/people"
)

// Who may approve: GATEHOUSE_APPROVERS (every tool), and
// GATEHOUSE_APPROVERS_<TOOL> for one tool, whose names depend on the
// tools, so they are found in the environment by prefix; the config
// file's approvers key takes the one list or a map of them.

// approversPrefix starts the environment name of a tool's approver list.
const approversPrefix = "GATEHOUSE_APPROVERS_"

// approversDefaultKey is the config file's key, in the approvers map, of
// the list for every tool.
const approversDefaultKey = "default"

// Environ lists the environment as NAME=value; the per-tool approver
// lists are found in it (their values are then read with getenv).
var Environ = os.Environ

func PlatformNames() []string {
	names := make([]string, len(Platforms))
	for i, p := range Platforms {
		names[i] = p.Name
	}
	return names
}

// setApprovers checks an approver list (see people.ParseApprovers) and
// stores it for tool ("" for every tool).
func setApprovers(c *Config, tool, v string) error {
	if _, err := people.ParseApprovers(v, PlatformNames()...); err != nil {
		return err
	}
	if tool == "" {
		c.Approvers = v
		return nil
	}
	if c.ToolApprovers == nil {
		c.ToolApprovers = map[string]string{}
	}
	c.ToolApprovers[people.ToolKey(tool)] = v
	return nil
}

// approversFromFile reads the config file's approvers value: one list
// (a string or a YAML list) for every tool, or a map of lists by tool with
// "default" for every tool.
func approversFromFile(c *Config, v any) error {
	list := func(v any) (string, error) {
		switch v := v.(type) {
		case string:
			return v, nil
		case []any:
			parts := make([]string, len(v))
			for i, p := range v {
				parts[i] = fmt.Sprint(p)
			}
			return strings.Join(parts, ","), nil
		case nil:
			return "", nil
		}
		return "", fmt.Errorf("want a list such as telegram:111,slack:U012, or %q, got %v", people.AllowedApprovers, v)
	}
	m, ok := v.(map[string]any)
	if !ok {
		s, err := list(v)
		if err != nil {
			return err
		}
		return setApprovers(c, "", s)
	}
	tools := make([]string, 0, len(m))
	for t := range m {
		tools = append(tools, t)
	}
	sort.Strings(tools)
	for _, t := range tools {
		s, err := list(m[t])
		if err == nil {
			if t == approversDefaultKey {
				err = setApprovers(c, "", s)
			} else {
				err = setApprovers(c, t, s)
			}
		}
		if err != nil {
			return fmt.Errorf("%s: %w", t, err)
		}
	}
	return nil
}

// toolApproversFromEnv reads every GATEHOUSE_APPROVERS_<TOOL> set.
// GATEHOUSE_APPROVERS_NEEDED and its _<TOOL> forms share the prefix but
// are the two-person rule's count (read by their own setting), not the
// approvers of a tool named NEEDED.
func toolApproversFromEnv(c *Config, getenv func(string) string) error {
	return perToolFromEnv(c, getenv, approversPrefix, func(c *Config, tool, v string) error {
		if approversPrefix+tool == "GATEHOUSE_APPROVERS_NEEDED" || strings.HasPrefix(approversPrefix+tool, approversNeededPrefix) {
			return nil
		}
		return setApprovers(c, tool, v)
	})
}

// The other settings of who decides, each with a _<TOOL> form found in
// the environment by prefix and a file key taking one value or a map by
// tool ("default" for every tool), like approvers.
const (
	requesterApprovesPrefix = "GATEHOUSE_REQUESTER_APPROVES_"
	approversNeededPrefix   = "GATEHOUSE_APPROVERS_NEEDED_"
)

// perToolSetters are the file keys that take a map by tool.
var perToolSetters = map[string]func(c *Config, tool, v string) error{
	"requester_approves": setRequesterApproves,
	"approvers_needed":   setApproversNeeded,
}

// setRequesterApproves reads on or off for tool ("" for every tool).
func setRequesterApproves(c *Config, tool, v string) error {
	var off bool
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "on", "true":
	case "off", "false":
		off = true
	default:
		return fmt.Errorf("want on or off, got %q", v)
	}
	if c.RequesterOff == nil {
		c.RequesterOff = map[string]bool{}
	}
	c.RequesterOff[toolKey(tool)] = off
	return nil
}

// setApproversNeeded reads a count of approvers for tool ("" for every
// tool).
func setApproversNeeded(c *Config, tool, v string) error {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n < 1 || n > 10 {
		return fmt.Errorf("want a number of people from 1 to 10, got %q", v)
	}
	if c.ApproversNeeded == nil {
		c.ApproversNeeded = map[string]int{}
	}
	c.ApproversNeeded[toolKey(tool)] = n
	return nil
}

func toolKey(tool string) string {
	if tool == "" {
		return ""
	}
	return people.ToolKey(tool)
}

// perToolFromFile reads a file value of one of perToolSetters: one value
// for every tool, or a map by tool with "default" for every tool.
func perToolFromFile(c *Config, v any, set func(c *Config, tool, v string) error) error {
	m, ok := v.(map[string]any)
	if !ok {
		return set(c, "", fmt.Sprint(v))
	}
	tools := make([]string, 0, len(m))
	for t := range m {
		tools = append(tools, t)
	}
	sort.Strings(tools)
	for _, t := range tools {
		tool := t
		if t == approversDefaultKey {
			tool = ""
		}
		if err := set(c, tool, fmt.Sprint(m[t])); err != nil {
			return fmt.Errorf("%s: %w", t, err)
		}
	}
	return nil
}

// perToolFromEnv reads every prefix<TOOL> set.
func perToolFromEnv(c *Config, getenv func(string) string, prefix string, set func(c *Config, tool, v string) error) error {
	var names []string
	for _, kv := range Environ() {
		name, _, _ := strings.Cut(kv, "=")
		if strings.HasPrefix(name, prefix) && len(name) > len(prefix) {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		v, ok := lookup(getenv, name)
		if !ok {
			continue
		}
		if err := set(c, strings.TrimPrefix(name, prefix), v); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	return nil
}

// ApproverRules are the gateway's approver rules.
func (c Config) ApproverRules() people.Approvers {
	a := people.Approvers{RequesterOff: c.RequesterOff, NeededBy: c.ApproversNeeded}
	a.Default, _ = people.ParseApprovers(c.Approvers)
	for tool, v := range c.ToolApprovers {
		if a.Tools == nil {
			a.Tools = map[string]people.ApproverRule{}
		}
		a.Tools[tool], _ = people.ParseApprovers(v)
	}
	return a
}

// ParseApprovalChat reads GATEHOUSE_APPROVAL_CHAT, platform:chat id.
func ParseApprovalChat(v string) (gh.Address, error) {
	v = strings.TrimSpace(v)
	if v == "" {
		return gh.Address{}, nil
	}
	platform, chat, ok := strings.Cut(v, ":")
	platform, chat = strings.ToLower(strings.TrimSpace(platform)), strings.TrimSpace(chat)
	if !ok || platform == "" || chat == "" || strings.ContainsAny(chat, " \t\r\n") {
		return gh.Address{}, fmt.Errorf("want platform:chat id (slack:C0123, telegram:-1001234567890), got %q", v)
	}
	known := false
	for _, p := range Platforms {
		known = known || p.Name == platform
	}
	if !known {
		return gh.Address{}, fmt.Errorf("%q: unknown platform %q (want one of %s)", v, platform, strings.Join(PlatformNames(), ", "))
	}
	return gh.Address{Platform: platform, ChatID: chat}, nil
}
