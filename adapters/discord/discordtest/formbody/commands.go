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
// (not null) of at most MaxGlobalCommands CHAT_INPUT commands without
// options, each named by Discord's rule in lowercase, names unique, with
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
		if _, e := c.StringOptions(p); e != nil {
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

// Option is a command's option as a bulk overwrite sends it. The fake
// knows STRING options (type 3), with or without fixed choices.
type Option struct {
	Type        int            `json:"type"`
	Name        string         `json:"name"`
	Description string         `json:"description"`
	Required    bool           `json:"required"`
	Choices     []OptionChoice `json:"choices"`
}

// OptionChoice is one of an option's fixed values.
type OptionChoice struct {
	Name  string `json:"name"`
	Value any    `json:"value"`
}

// StringOptions reads and checks the command's options (p is its path in
// the body): at most 25, each a STRING option named by the command-name
// rule in lowercase, unique, with a description of 1–100 characters, at
// most 25 choices of string values of 1–100 characters, the required
// ones first.
func (c Command) StringOptions(p string) ([]Option, *Error) {
	if c.Options == nil || string(*c.Options) == "null" {
		return nil, nil
	}
	var opts []Option
	if err := json.Unmarshal(*c.Options, &opts); err != nil {
		return nil, invalid(p+".options", "MODEL_TYPE_CONVERT", "Must be an array of options.")
	}
	if len(opts) > 25 {
		return nil, invalid(p+".options", "BASE_TYPE_BAD_LENGTH", "Must be 25 or fewer in length.")
	}
	seen, optional := map[string]bool{}, false
	for j, o := range opts {
		q := p + ".options." + strconv.Itoa(j)
		switch {
		case o.Type != 3:
			return nil, invalid(q+".type", "COMMAND_OPTION_TYPE_UNSUPPORTED", "The fake knows STRING (type 3) options only.")
		case !commandName.MatchString(o.Name) || strings.ToLower(o.Name) != o.Name:
			return nil, invalid(q+".name", "APPLICATION_COMMAND_INVALID_NAME", "Command name is invalid")
		case seen[o.Name]:
			return nil, invalid(q+".name", "APPLICATION_COMMAND_OPTIONS_NAME_ALREADY_EXISTS", "Option names must be unique")
		case utf8.RuneCountInString(o.Description) < 1 || utf8.RuneCountInString(o.Description) > 100:
			return nil, invalid(q+".description", "BASE_TYPE_BAD_LENGTH", "Must be between 1 and 100 in length.")
		case o.Required && optional:
			return nil, invalid(q+".required", "APPLICATION_COMMAND_OPTIONS_REQUIRED_INVALID", "Required options must be placed before non-required options")
		case len(o.Choices) > 25:
			return nil, invalid(q+".choices", "BASE_TYPE_BAD_LENGTH", "Must be 25 or fewer in length.")
		}
		for k, ch := range o.Choices {
			v, ok := ch.Value.(string)
			if n := utf8.RuneCountInString(ch.Name); n < 1 || n > 100 || !ok || utf8.RuneCountInString(v) < 1 || utf8.RuneCountInString(v) > 100 {
				return nil, invalid(q+".choices."+strconv.Itoa(k), "BASE_TYPE_BAD_LENGTH", "A choice needs a name and a string value of 1 to 100 characters.")
			}
		}
		seen[o.Name], optional = true, optional || !o.Required
	}
	return opts, nil
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
