package chat

import (
	"strconv"
	"strings"
)

// Choices a button carries.
const (
	ChoiceApprove = "approve"
	ChoiceDeny    = "deny"
	// ChoiceApproveChat approves and grants the tool's later calls with
	// the same bound in this chat ("Approve for this chat", gh.ScopeChat).
	ChoiceApproveChat = "approve_chat"
	// ChoiceDenyReason asks for a reason before denying: its press
	// decides nothing (see PressResult.AskReason).
	ChoiceDenyReason = "deny_reason"
	// ChoiceOption prefixes a clarify gate's option index: "option:2".
	ChoiceOption = "option:"
	// ChoiceRevokeGrant revokes the grant whose id the press carries in
	// place of a gate id (a Revoke button: see the gateway's grants.go).
	ChoiceRevokeGrant = "revoke_grant"
)

// ButtonData is the data a button carries: "gh:<choice>:<gateID>", with
// choice a (approve), c (approve for this chat), d (deny), r (deny with a
// reason), o<n> (option n) or v (revoke the grant whose id it carries).
func ButtonData(gateID, choice string) string {
	c := "a"
	switch {
	case choice == ChoiceDeny:
		c = "d"
	case choice == ChoiceApproveChat:
		c = "c"
	case choice == ChoiceDenyReason:
		c = "r"
	case choice == ChoiceRevokeGrant:
		c = "v"
	case strings.HasPrefix(choice, ChoiceOption):
		c = "o" + strings.TrimPrefix(choice, ChoiceOption)
	}
	return "gh:" + c + ":" + gateID
}

// ParseButtonData reverses [ButtonData]. ok is false for data that is not
// ours (a button of another bot, a forged press).
func ParseButtonData(data string) (gateID, choice string, ok bool) {
	rest, found := strings.CutPrefix(data, "gh:")
	if !found {
		return "", "", false
	}
	c, id, found := strings.Cut(rest, ":")
	if !found || !ValidGateID(id) {
		return "", "", false
	}
	switch {
	case c == "a":
		return id, ChoiceApprove, true
	case c == "d":
		return id, ChoiceDeny, true
	case c == "c":
		return id, ChoiceApproveChat, true
	case c == "r":
		return id, ChoiceDenyReason, true
	case c == "v":
		return id, ChoiceRevokeGrant, true
	case strings.HasPrefix(c, "o"):
		n, err := strconv.Atoi(c[1:])
		if err != nil || n < 0 || n > 99 {
			return "", "", false
		}
		return id, ChoiceOption + strconv.Itoa(n), true
	}
	return "", "", false
}

// ValidGateID accepts what gate ids are made of (letters, digits, _ and
// -, at most 200): data forged by a modified client is not ours, and a
// press naming anything else decides nothing.
func ValidGateID(id string) bool {
	if id == "" || len(id) > 200 {
		return false
	}
	for _, r := range id {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-') {
			return false
		}
	}
	return true
}
