package gateway

import (
	"context"
	"strings"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/gateway/people"
)

// timeZone answers /tz, for the person who sent it (not the chat: in a
// group each member has their own): "/tz Europe/Berlin" sets their zone
// (people.Admin.SetZone checks the name), "/tz default" clears it, "/tz"
// alone says which zone their turns are dated in and where it comes from.
// A Discord client sends the option as "zone:Europe/Berlin".
func (g *Gateway) timeZone(ctx context.Context, in gh.Inbound) (chat.CommandReply, string, error) {
	arg := clip(strings.TrimSpace(in.Text), 80)
	if v, ok := strings.CutPrefix(arg, "zone:"); ok {
		arg = strings.TrimSpace(v)
	}
	now := g.cfg.Now()
	switch {
	case arg == "":
		z, ok, err := g.st.GetPersonZone(ctx, people.UserKey(in.Platform, in.UserID))
		if err != nil {
			return chat.CommandReply{}, "", err
		}
		loc, lerr := time.LoadLocation(z.Zone)
		if !ok || lerr != nil {
			return chat.CommandReply{Text: "You have no time zone of your own: your messages are dated in the gateway's, " + g.gatewayZone() +
				", " + timeThere(now, g.cfg.Location) + ". Set yours with /" + chat.CommandTimeZone + " and an IANA name, such as /" + chat.CommandTimeZone + " Europe/Berlin."}, "/tz: shown, the gateway's", nil
		}
		return chat.CommandReply{Text: "Your time zone is " + z.Zone + " (set by " + z.SetBy + " on " + z.Set.UTC().Format("2 January 2006") + "), " +
			timeThere(now, loc) + ". /" + chat.CommandTimeZone + " and a name changes it; /" + chat.CommandTimeZone + " default goes back to the gateway's, " + g.gatewayZone() + "."}, "/tz: shown, " + z.Zone, nil
	case strings.EqualFold(arg, "default"):
		admin := people.NewAdmin(g.st, g.cfg.Now)
		err := admin.ClearZone(ctx, in.Platform, in.UserID)
		if err != nil && !gh.IsCode(err, gh.CodeNotFound) {
			return chat.CommandReply{}, "", err
		}
		return chat.CommandReply{Text: "Your messages are dated in the gateway's time zone, " + g.gatewayZone() + ", " + timeThere(now, g.cfg.Location) + "."}, "/tz: cleared", nil
	}
	admin := people.NewAdmin(g.st, g.cfg.Now)
	z, err := admin.SetZone(ctx, in.Platform, in.UserID, in.UserName, arg, firstNonEmpty(in.UserName, in.UserID)+" ("+in.Platform+")")
	if gh.IsCode(err, gh.CodeInvalid) {
		return chat.CommandReply{Text: gh.ErrorMessage(err) + ". Your time zone is unchanged."}, "/tz: refused " + arg, nil
	}
	if err != nil {
		return chat.CommandReply{}, "", err
	}
	loc, _ := time.LoadLocation(z.Zone)
	return chat.CommandReply{Text: "Your time zone is now " + z.Zone + ", " + timeThere(now, loc) + ": the agent dates your messages in it."}, "/tz: set " + z.Zone, nil
}

// gatewayZone names the gateway's time zone, which a person without their
// own has, and where it is set.
func (g *Gateway) gatewayZone() string {
	if g.cfg.Location == time.Local {
		return "the server's (GATEHOUSE_TIMEZONE is not set)"
	}
	return g.cfg.Location.String() + " (GATEHOUSE_TIMEZONE)"
}

// timeThere says what time it is in loc: "where it is 14:05 on Tuesday, 1
// December".
func timeThere(now time.Time, loc *time.Location) string {
	return "where it is " + now.In(loc).Format("15:04 on Monday, 2 January")
}
