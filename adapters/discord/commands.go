package discord

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/bwmarrin/discordgo"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/internal/backoff"
)

// Slash commands. Discord offers a user only the commands the
// application registered, so Connect registers the gateway's commands
// (chat.CommandGrants, chat.CommandTimeZone) after READY: one bulk overwrite of the global
// commands (PUT /applications/{id}/commands), which replaces whatever
// was registered before and keeps a command's id when it is named again,
// so registering on every start never duplicates. It runs in the
// background, retried with the reconnect backoff until it succeeds or
// Connect ends; messages and presses never wait for it. An invocation
// (INTERACTION_CREATE of type 2) goes to Sink.Command and is answered
// ephemerally, only to whoever sent it.

// Answers the sender of a command sees when there is nothing better.
const (
	commandUnreadable = "Gatehouse could not read this command."
	commandFailed     = "Gatehouse could not answer, try again."
)

// slashCommands are the global commands the adapter registers. A
// command that takes an argument has one string option, its value what
// a Telegram user types after the name (see commandText).
func slashCommands() []*discordgo.ApplicationCommand {
	dm := true
	cmds := []*discordgo.ApplicationCommand{
		{Name: chat.CommandGrants, Description: "List this chat's grants and revoke them"},
		{Name: chat.CommandModel, Description: "Show this chat's model and the ones it may pick, or pick one",
			Options: []*discordgo.ApplicationCommandOption{argOption("model", "A listed model (its name or number), or default")}},
		{Name: chat.CommandThink, Description: "Show or set this chat's thinking level",
			Options: []*discordgo.ApplicationCommandOption{argOption("level", "off, low, medium, high, or default", "off", "low", "medium", "high", "default")}},
		{Name: chat.CommandTimeZone, Description: "Set your time zone, or show it",
			Options: []*discordgo.ApplicationCommandOption{argOption("zone", "An IANA time zone such as Europe/Berlin; default goes back to the gateway's")}},
	}
	for _, c := range cmds {
		c.Type, c.DMPermission = discordgo.ChatApplicationCommand, &dm
		c.Contexts = &[]discordgo.InteractionContextType{discordgo.InteractionContextGuild, discordgo.InteractionContextBotDM}
		if c.Options == nil {
			c.Options = []*discordgo.ApplicationCommandOption{}
		}
	}
	return cmds
}

// argOption is a command's one optional string option; with choices, the
// client offers only those.
func argOption(name, description string, choices ...string) *discordgo.ApplicationCommandOption {
	o := &discordgo.ApplicationCommandOption{Type: discordgo.ApplicationCommandOptionString, Name: name, Description: description}
	for _, c := range choices {
		o.Choices = append(o.Choices, &discordgo.ApplicationCommandOptionChoice{Name: c, Value: c})
	}
	return o
}

// registerCommands starts the registration of the slash commands, once
// per Connect, on the first READY. It runs on discordgo's reading
// goroutine, so it only starts the work.
func (c *connection) registerCommands(r *discordgo.Ready) {
	appID := ""
	if r.Application != nil {
		appID = r.Application.ID
	}
	if appID == "" && r.User != nil {
		// A bot's application id is its user id for every application
		// made since 2019; READY always carries the application anyway.
		appID = r.User.ID
	}
	if appID == "" {
		c.a.log.Error("discord READY without an application id: slash commands are not registered")
		return
	}
	c.register.Do(func() {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			p := reconnectPolicy
			p.Ceiling = c.a.cfg.ReconnectMaxWait
			// The registration ends with the connection: Connect waits
			// for it, and a connection that ended (a refused token) must
			// not be held open by its retries.
			rctx, cancel := context.WithCancel(c.ctx)
			defer cancel()
			go func() {
				select {
				case <-c.closed:
					cancel()
				case <-rctx.Done():
				}
			}()
			c.a.registerCommands(rctx, appID, p.New())
		}()
	})
}

// registerCommands overwrites the application's global commands with
// slashCommands, retrying with backoff until it succeeds or ctx ends.
func (a *Adapter) registerCommands(ctx context.Context, appID string, wait *backoff.Backoff) {
	cmds := slashCommands()
	for {
		got, err := a.rest.ApplicationCommandBulkOverwrite(appID, "", cmds, discordgo.WithContext(ctx))
		if ctx.Err() != nil {
			return
		}
		if err == nil {
			names := make([]string, 0, len(got))
			for _, c := range got {
				names = append(names, "/"+c.Name)
			}
			a.log.Info("discord slash commands registered", "application_id", appID, "commands", strings.Join(names, " "))
			return
		}
		d := wait.Next()
		var rl *discordgo.RateLimitError
		if errors.As(err, &rl) && rl.RateLimit != nil && rl.TooManyRequests != nil && rl.RetryAfter > d {
			d = rl.RetryAfter
		}
		log := a.log.Warn
		var re *discordgo.RESTError
		if errors.As(err, &re) && re.Response != nil && permanentStatus(re.Response.StatusCode) {
			// Discord refused the commands themselves or the bot's right to
			// them: a retry helps only after a fix, so say so loudly.
			log = a.log.Error
		}
		log("discord slash command registration failed; retrying", "application_id", appID, "attempt", wait.Failures(), "retry_in", d, "err", err)
		if !backoff.Sleep(ctx, d) {
			return
		}
	}
}

// commandFromInteraction normalises a slash command invocation: the
// command's name and the update as the gateway logs it. ok is false when
// the interaction lacks what an answer needs (id, token, channel,
// sender, a name).
func commandFromInteraction(i *discordgo.Interaction, now time.Time) (in gh.Inbound, name string, ok bool) {
	if i == nil || i.ID == "" || i.Token == "" || i.ChannelID == "" || i.Type != discordgo.InteractionApplicationCommand {
		return gh.Inbound{}, "", false
	}
	d, ok := i.Data.(discordgo.ApplicationCommandInteractionData)
	if !ok || d.Name == "" {
		return gh.Inbound{}, "", false
	}
	u := interactionUser(i)
	if u == nil || u.ID == "" {
		return gh.Inbound{}, "", false
	}
	in = gh.Inbound{
		Platform:   gh.PlatformDiscord,
		UpdateID:   i.ID,
		ChatID:     i.ChannelID,
		ChatType:   gh.ChatGroup,
		UserID:     u.ID,
		UserName:   u.Username,
		Text:       commandText(d.Options),
		IsBot:      u.Bot,
		ReceivedAt: now,
	}
	if i.GuildID == "" {
		in.ChatType = gh.ChatDM
	}
	return in, d.Name, true
}

// commandText is what followed the command's name: the value alone of a
// command's one string option (as a Telegram user types it after the
// name: "/model o3"), else the options as the client shows them.
func commandText(opts []*discordgo.ApplicationCommandInteractionDataOption) string {
	if len(opts) == 1 && opts[0] != nil && opts[0].Type == discordgo.ApplicationCommandOptionString && len(opts[0].Options) == 0 {
		if v, ok := opts[0].Value.(string); ok {
			return strings.TrimSpace(v)
		}
	}
	return optionsText(opts)
}

// optionsText writes a command's options as the Discord client shows
// them after the name ("name:value", sub-commands by name).
func optionsText(opts []*discordgo.ApplicationCommandInteractionDataOption) string {
	var parts []string
	for _, o := range opts {
		if o == nil {
			continue
		}
		switch {
		case len(o.Options) > 0 || o.Value == nil:
			parts = append(parts, strings.TrimSpace(o.Name+" "+optionsText(o.Options)))
		default:
			parts = append(parts, fmt.Sprintf("%s:%v", o.Name, o.Value))
		}
	}
	return strings.Join(parts, " ")
}

// commandResponse answers a slash command with the gateway's reply,
// ephemerally: type 4 with flags 64, the text escaped so nothing in it
// is read as Markdown or a mention, and its buttons (Revoke) in action
// rows. nil means no answer is due (a redelivery already answered).
func (a *Adapter) commandResponse(ctx context.Context, sink chat.Sink, i *discordgo.Interaction, timeout time.Duration) *discordgo.InteractionResponse {
	in, name, ok := commandFromInteraction(i, time.Now())
	if !ok {
		a.log.Warn("discord slash command that cannot be read", "interaction_id", i.ID)
		return ephemeral(commandUnreadable)
	}
	cctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	reply, err := sink.Command(cctx, name, in)
	if err != nil {
		a.log.Error("discord slash command not answered", "interaction_id", i.ID, "command", name, "err", err)
		return ephemeral(commandFailed)
	}
	if reply.Duplicate {
		a.log.Info("discord slash command redelivered; answered the first time", "interaction_id", i.ID, "command", name)
		return nil
	}
	text := reply.Text
	if text == "" {
		text = pressNoted
	}
	resp := ephemeral(truncateRunes(FormatLiteral(text), maxText))
	if reply.Refused || len(reply.Buttons) == 0 {
		return resp
	}
	buttons := reply.Buttons
	if len(buttons) > buttonsPerRow*maxRows {
		a.log.Warn("discord slash command answer has more buttons than a message takes; showing the first ones",
			"command", name, "buttons", len(buttons))
		buttons = buttons[:buttonsPerRow*maxRows]
	}
	rows, err := buttonRows(buttons)
	if err != nil {
		a.log.Error("discord slash command answer's buttons cannot be shown; answering with text", "command", name, "err", err)
		return resp
	}
	resp.Data.Components = rows
	return resp
}
