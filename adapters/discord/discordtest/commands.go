package discordtest

import (
	"fmt"
	"net/http"
	"slices"
	"strconv"

	"github.com/gatehouse/gatehouse/adapters/adaptertest"
	"github.com/gatehouse/gatehouse/adapters/discord/discordtest/formbody"
	"github.com/gatehouse/gatehouse/adapters/discord/discordtest/wire"
)

// ---- application commands (slash commands) ----

// discordCommand is a registered global command.
type discordCommand = wire.Command

// putCommands answers PUT /applications/{id}/commands: the bulk
// overwrite of the global commands. Commands keep their id across an
// overwrite that names them again; commands not named are deleted.
func (f *DiscordFake) putCommands(w http.ResponseWriter, r *http.Request, appID string) {
	var reqs []formbody.Command
	if !f.readJSON(w, r, &reqs) {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if appID != f.appID {
		f.refuse("%s %s: application %s is not the bot's (%s)", r.Method, r.URL.Path, appID, f.appID)
		wire.JSON(w, http.StatusForbidden, map[string]any{"message": "Missing Access", "code": 50001})
		return
	}
	if f.failPuts > 0 {
		f.failPuts--
		wire.JSON(w, http.StatusInternalServerError, map[string]any{"message": "500: Internal Server Error", "code": 0})
		return
	}
	if e := formbody.CheckCommands(reqs); e != nil {
		f.formRefused(w, r, "", e)
		return
	}
	old := map[string]*discordCommand{}
	for _, c := range f.commands {
		old[c.Name] = c
	}
	next := make([]*discordCommand, 0, len(reqs))
	for i, c := range reqs {
		cmd := &discordCommand{
			Name: c.Name, Description: c.Description, DMPermission: c.DMPermission,
			Contexts: c.Contexts, IntegrationTypes: c.IntegrationTypes,
		}
		opts, _ := c.StringOptions(strconv.Itoa(i)) // checked above
		for _, o := range opts {
			wo := wire.Option{Name: o.Name, Description: o.Description, Required: o.Required}
			for _, ch := range o.Choices {
				wo.Choices = append(wo.Choices, ch.Value.(string))
			}
			cmd.Options = append(cmd.Options, wo)
		}
		if prev, ok := old[c.Name]; ok {
			cmd.ID = prev.ID
		} else {
			cmd.ID = f.snowflake()
		}
		cmd.Version = f.snowflake()
		next = append(next, cmd)
	}
	f.commands = next
	f.commandPuts++
	out := make([]any, 0, len(next))
	for _, c := range next {
		out = append(out, c.JSON(f.appID))
	}
	wire.JSON(w, http.StatusOK, out)
}

// getCommands answers GET /applications/{id}/commands.
func (f *DiscordFake) getCommands(w http.ResponseWriter, r *http.Request, appID string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if appID != f.appID {
		f.refuse("%s %s: application %s is not the bot's (%s)", r.Method, r.URL.Path, appID, f.appID)
		wire.JSON(w, http.StatusForbidden, map[string]any{"message": "Missing Access", "code": 50001})
		return
	}
	out := make([]any, 0, len(f.commands))
	for _, c := range f.commands {
		out = append(out, c.JSON(f.appID))
	}
	wire.JSON(w, http.StatusOK, out)
}

// AppID is the application's id (READY's application.id, the id in
// /applications/{id}/commands).
func (f *DiscordFake) AppID() string { return f.appID }

// Commands lists the names of the registered global commands, in the
// order registered.
func (f *DiscordFake) Commands() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]string, 0, len(f.commands))
	for _, c := range f.commands {
		out = append(out, c.Name)
	}
	return out
}

// CommandID is the id of the registered command name ("" when none is):
// an overwrite that names a command again keeps its id.
func (f *DiscordFake) CommandID(name string) string {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.commands {
		if c.Name == name {
			return c.ID
		}
	}
	return ""
}

// FailCommandPuts makes the next n bulk overwrites of the commands fail
// with a 500, as Discord sometimes does; they are not Errors.
func (f *DiscordFake) FailCommandPuts(n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.failPuts = n
}

// CommandPuts counts the accepted bulk overwrites of the global
// commands.
func (f *DiscordFake) CommandPuts() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.commandPuts
}

// Command makes user invoke the slash command /name in chat: an
// INTERACTION_CREATE of type 2 (APPLICATION_COMMAND). A Discord client
// offers only registered commands, so a name the bot has not registered
// globally (or one not usable in a DM, for a DM chat) is an error, and
// nothing is sent. It waits up to the interaction deadline for the
// answer and returns the message the answer made (type 4; ephemeral
// with flags 64, which only user sees and only user can press buttons
// of), or an error for an answer that shows none.
func (f *DiscordFake) Command(chat, user, name string) (adaptertest.Message, error) {
	return f.CommandArgs(chat, user, name, "")
}

// CommandArgs is Command with args typed into the command's first option,
// as a Discord client fills it in: a command without options takes no
// args, an option with fixed choices only one of them, and a required
// option must be given.
func (f *DiscordFake) CommandArgs(chat, user, name, args string) (adaptertest.Message, error) {
	f.mu.Lock()
	ix, err := f.command(chat, user, name, args)
	f.mu.Unlock()
	if err != nil {
		return adaptertest.Message{}, err
	}
	if _, err := f.await(ix); err != nil {
		return adaptertest.Message{}, err
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if ix.reply == nil {
		return adaptertest.Message{}, fmt.Errorf("discord fake: /%s was answered with type %d, which shows no message", name, ix.Type)
	}
	return f.view(ix.reply).Message, nil
}

// command dispatches the interaction of Command. f.mu held.
func (f *DiscordFake) command(chat, user, name, args string) (*discordInteraction, error) {
	var cmd *discordCommand
	for _, c := range f.commands {
		if c.Name == name {
			cmd = c
		}
	}
	if cmd == nil {
		return nil, fmt.Errorf("discord fake: no application command %q is registered (registered: %q): a Discord client cannot send it", name, f.commandNames())
	}
	ch := f.channel(chat)
	if !cmd.UsableIn(ch.guildID == "") {
		return nil, fmt.Errorf("discord fake: /%s is not usable in %q (dm_permission or contexts)", name, chat)
	}
	if err := f.canInteract(); err != nil {
		return nil, err
	}
	data := map[string]any{"id": cmd.ID, "name": cmd.Name, "type": 1}
	switch {
	case args != "" && len(cmd.Options) == 0:
		return nil, fmt.Errorf("discord fake: /%s has no options: a Discord client takes no text after it", name)
	case args != "":
		o := cmd.Options[0]
		if len(o.Choices) > 0 && !slices.Contains(o.Choices, args) {
			return nil, fmt.Errorf("discord fake: /%s's option %s takes one of %q only, not %q", name, o.Name, o.Choices, args)
		}
		data["options"] = []map[string]any{{"name": o.Name, "type": 3, "value": args}}
	case len(cmd.Options) > 0 && cmd.Options[0].Required:
		return nil, fmt.Errorf("discord fake: /%s's option %s is required", name, cmd.Options[0].Name)
	}
	return f.interact(ch, nil, f.user(user), 2, name, data), nil
}

func (f *DiscordFake) commandNames() []string {
	out := make([]string, 0, len(f.commands))
	for _, c := range f.commands {
		out = append(out, c.Name)
	}
	return out
}
