package people

import (
	"context"
	"strings"
	"time"
	"unicode"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/store"
)

// A person's time zone. A person sets it in the chat (/tz Europe/Berlin),
// an admin under People in /admin or over the API; the base prompt of a
// turn answering them gives the date and time in it, read from the store
// by the turn, so every replica agrees at once. Without one, the
// gateway's (GATEHOUSE_TIMEZONE) applies.

// maxZoneLen bounds a zone name: the longest IANA name is 32 characters
// (America/Argentina/ComodRivadavia).
const maxZoneLen = 64

// ParseZone reads a time zone as a person or an admin gives it: an IANA
// name ("Europe/Berlin", "UTC"), which the binary's zone database knows.
// A name in the wrong case ("europe/berlin") is taken in its right case
// when that is a zone. Anything else is refused with CodeInvalid: a path
// ("../etc/passwd", "/usr/share/zoneinfo/UTC"), "Local" (the server's
// zone, which would change with the host), an offset ("+02:00").
func ParseZone(name string) (*time.Location, error) {
	name = strings.TrimSpace(name)
	if err := checkZoneName(name); err != nil {
		return nil, err
	}
	for _, n := range []string{name, zoneCase(name), strings.ToUpper(name)} {
		if loc, err := time.LoadLocation(n); err == nil && n != "Local" && n != "" {
			return loc, nil
		}
	}
	return nil, gh.Errorf(gh.CodeInvalid, "%q is not a time zone this gateway knows: give an IANA name such as Europe/Berlin, America/New_York or UTC", name)
}

// checkZoneName refuses what cannot be an IANA name before the zone
// database is asked: time.LoadLocation reads a file of that name (from
// ZONEINFO or the system's zoneinfo) and must never be handed a path.
func checkZoneName(name string) error {
	bad := name == "" || len(name) > maxZoneLen || strings.HasPrefix(name, "/") || strings.HasSuffix(name, "/") ||
		strings.Contains(name, "//") || strings.EqualFold(name, "Local")
	for _, r := range name {
		if r > unicode.MaxASCII || !(unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("/_+-", r)) {
			bad = true
		}
	}
	if bad {
		return gh.Errorf(gh.CodeInvalid, "%q is not a time zone: give an IANA name such as Europe/Berlin, America/New_York or UTC", name)
	}
	return nil
}

// zoneCase writes name as IANA names are: each word capitalised
// ("america/new_york" → "America/New_York").
func zoneCase(name string) string {
	b := []byte(strings.ToLower(name))
	for i := range b {
		if (i == 0 || strings.IndexByte("/_-", b[i-1]) >= 0) && b[i] >= 'a' && b[i] <= 'z' {
			b[i] -= 'a' - 'A'
		}
	}
	return string(b)
}

// SetZone sets the time zone of the platform's user userID (name is how
// they are shown, "" to keep the name known) to zone, checked with
// [ParseZone]; by says who set it and where. It returns what was stored.
func (a *Admin) SetZone(ctx context.Context, platform, userID, name, zone, by string) (store.PersonZone, error) {
	if err := checkUser(platform, userID); err != nil {
		return store.PersonZone{}, err
	}
	loc, err := ParseZone(zone)
	if err != nil {
		return store.PersonZone{}, err
	}
	z := store.PersonZone{UserKey: UserKey(platform, userID), Platform: platform, UserID: userID, UserName: strings.TrimSpace(name),
		Zone: loc.String(), SetBy: by, Set: a.now().UTC()}
	err = a.st.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		if z.UserName == "" {
			if old, ok, err := tx.GetPersonZone(ctx, z.UserKey); err != nil {
				return err
			} else if ok {
				z.UserName = old.UserName
			} else if p, ok, err := tx.GetPerson(ctx, platform, userID); err != nil {
				return err
			} else if ok {
				z.UserName = p.UserName
			}
		}
		return tx.PutPersonZone(ctx, z)
	})
	return z, err
}

// ClearZone clears the time zone of the platform's user userID: the
// gateway's applies again. One with none set is CodeNotFound.
func (a *Admin) ClearZone(ctx context.Context, platform, userID string) error {
	if err := checkUser(platform, userID); err != nil {
		return err
	}
	ok, err := a.st.DeletePersonZone(ctx, UserKey(platform, userID))
	if err != nil {
		return err
	}
	if !ok {
		return gh.Errorf(gh.CodeNotFound, "%s user %s has no time zone set (the gateway's applies)", platform, userID)
	}
	return nil
}

// checkUser refuses a platform this build does not know and a user id
// that is not one.
func checkUser(platform, userID string) error {
	if !chat.Registered(platform) {
		return gh.Errorf(gh.CodeInvalid, "platform must be one of %s, not %q", strings.Join(chat.RegisteredNames(), ", "), platform)
	}
	if strings.TrimSpace(userID) == "" {
		return gh.Errorf(gh.CodeInvalid, "user must be the platform's user id")
	}
	return chat.CheckID("user id", userID)
}
