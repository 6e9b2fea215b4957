package formbody

import (
	"encoding/json"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"
)

// commandName is Discord's rule for a command name (CHAT_INPUT names must
// also be lowercase where a letter has a lowercase form).
var commandName = regexp.MustCompile(`^[-_\p{L}\p{N}\p{Devanagari}\p{Thai}]{1,32}$`)

// MaxGlobalCommands is how many global CHAT_INPUT commands an
// application may have.
const MaxGlobalCommands = 100

// Command is an application command as a bulk overwrite sends it.
type Command struct {
	ID                       string           `json:"id"`
	Type                     *int             `json:"type"`
	Name                     string           `json:"name"`
	Description              string           `json:"description"`
	Options                  *json.RawMessage `json:"options"`
	DMPermission             *bool            `json:"dm_permission"`
	DefaultMemberPermissions *json.RawMessage `json:"default_member_permissions"`
	Contexts                 *[]int           `json:"contexts"`
	IntegrationTypes         *[]int           `json:"integration_types"`
	NSFW                     *bool            `json:"nsfw"`
}

// CheckCommands checks a bulk overwrite of the global commands: an array
// (not null) of at most MaxGlobalCommands CHAT_INPUT commands, with
// STRING options at most (see checkOptions), each named by Discord's rule in lowercase, names unique, with
// a description of 1–100 characters, contexts among 0–2 and integration
// types among 0–1.
func CheckCommands(reqs []Command) *Error {
	if reqs == nil {
		return invalid("_root", "MODEL_TYPE_CONVERT", "Must be an array.")
	}
	if len(reqs) > MaxGlobalCommands {
		return invalid("_root", "BASE_TYPE_BAD_LENGTH", "Must be 100 or fewer in length.")
	}
	seen := map[string]bool{}
	for i, c := range reqs {
		p := strconv.Itoa(i)
		switch {
		case c.Type != nil && *c.Type != 1:
			return invalid(p+".type", "COMMAND_TYPE_UNSUPPORTED", "The fake knows CHAT_INPUT (type 1) commands only.")
		case !commandName.MatchString(c.Name):
			return invalid(p+".name", "APPLICATION_COMMAND_INVALID_NAME", "Command name is invalid")
		case strings.ToLower(c.Name) != c.Name:
			return invalid(p+".name", "APPLICATION_COMMAND_INVALID_NAME", "Command name is invalid (CHAT_INPUT names are lowercase)")
		case utf8.RuneCountInString(c.Description) < 1 || utf8.RuneCountInString(c.Description) > 100:
			return invalid(p+".description", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length.")
		case seen[c.Name]:
			return invalid(p+".name", "APPLICATION_COMMANDS_DUPLICATE_NAME", "Application command names must be unique")
		}
		if e := checkOptions(p+".options", c.Options); e != nil {
			return e
		}
		if e := choices(p+".contexts.", c.Contexts, 2, "Value must be one of {0, 1, 2}."); e != nil {
			return e
		}
		if e := choices(p+".integration_types.", c.IntegrationTypes, 1, "Value must be one of {0, 1}."); e != nil {
			return e
		}
		seen[c.Name] = true
	}
	return nil
}

// choices checks that every value of list (when sent) is 0 to most.
func choices(path string, list *[]int, most int, msg string) *Error {
	if list == nil {
		return nil
	}
	for j, v := range *list {
		if v < 0 || v > most {
			return invalid(path+strconv.Itoa(j), "BASE_TYPE_CHOICES", msg)
		}
	}
	return nil
}

// Option is a command's option as a bulk overwrite sends it.
type Option struct {
	Type        int    `json:"type"`
	Name        string `json:"name"`
	Description string `json:"description"`
	Required    bool   `json:"required"`
}

// checkOptions checks a command's options as Discord does, for the kind
// the fake knows: STRING (type 3) options, at most 25, each named by the
// command name's rule in lowercase, names unique, with a description of
// 1–100 characters, the required ones before the optional ones.
func checkOptions(path string, raw *json.RawMessage) *Error {
	if raw == nil || string(*raw) == "null" {
		return nil
	}
	var opts []Option
	if err := json.Unmarshal(*raw, &opts); err != nil {
		return invalid(path, "MODEL_TYPE_CONVERT", "Must be an array of options.")
	}
	if len(opts) > 25 {
		return invalid(path, "BASE_TYPE_BAD_LENGTH", "Must be 25 or fewer in length.")
	}
	seen, optional := map[string]bool{}, false
	for i, o := range opts {
		p := path + "." + strconv.Itoa(i)
		switch {
		case o.Type != 3:
			return invalid(p+".type", "COMMAND_OPTION_TYPE_UNSUPPORTED", "The fake knows STRING (type 3) options only.")
		case !commandName.MatchString(o.Name) || strings.ToLower(o.Name) != o.Name:
			return invalid(p+".name", "APPLICATION_COMMAND_INVALID_NAME", "Command name is invalid")
		case utf8.RuneCountInString(o.Description) < 1 || utf8.RuneCountInString(o.Description) > 100:
			return invalid(p+".description", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length.")
		case seen[o.Name]:
			return invalid(p+".name", "APPLICATION_COMMAND_OPTIONS_NAME_ALREADY_EXISTS", "Option names must be unique")
		case o.Required && optional:
			return invalid(p+".required", "APPLICATION_COMMAND_OPTIONS_REQUIRED_INVALID", "Required options must be placed before non-required options")
		}
		seen[o.Name], optional = true, optional || !o.Required
	}
	return nil
}
