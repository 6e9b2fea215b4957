package people_test

import (
	"encoding/json"
	"fmt"
	"testing"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/gateway/people"
)

// The one rule of who may decide, every kind × every surface × every
// mode: the requester (alice), a named approver (carol), someone else
// allowed in the chat (bob), and the operator.
func TestMayDecide(t *testing.T) {
	alice, bob, carol := people.UserKey("telegram", "1"), people.UserKey("telegram", "2"), people.UserKey("telegram", "3")
	_ = bob
	named := people.ApproverRule{Users: []people.Approver{{Platform: "telegram", UserID: "3"}}}
	modes := map[string]people.Approvers{
		"unset":                  {},
		"allowed":                {Default: people.ApproverRule{Allowed: true}},
		"named":                  {Default: named},
		"tool allowed":           {Tools: map[string]people.ApproverRule{"EMAIL_SEND": {Allowed: true}, "LIBRARY_ADD": {Allowed: true}}},
		"tool named":             {Default: people.ApproverRule{Allowed: true}, Tools: map[string]people.ApproverRule{"EMAIL_SEND": named, "LIBRARY_ADD": named}},
		"requester off":          {Default: named, RequesterOff: map[string]bool{"": true}},
		"requester off allowed":  {Default: people.ApproverRule{Allowed: true}, RequesterOff: map[string]bool{"": true}},
		"requester off for tool": {Default: named, RequesterOff: map[string]bool{"EMAIL_SEND": true, "LIBRARY_ADD": true}},
		"requester on for tool":  {Default: named, RequesterOff: map[string]bool{"": true, "EMAIL_SEND": false, "LIBRARY_ADD": false}},
	}
	libArgs, _ := json.Marshal(map[string]string{"name": "handbook.md", "by": alice})
	replaceArgs, _ := json.Marshal(map[string]any{"name": "handbook.md", "by": alice, gh.LibraryReplacesOperatorKey: true})
	kinds := map[string]gh.GateOpened{
		// A library card over the operator's own document: the operator's
		// alone, in every mode.
		"library over the operator's": {Kind: gh.GateKindLibrary, Tool: "library_add", Arguments: replaceArgs},
		"approval":                    {Kind: gh.GateKindApproval, Tool: "email_send", Requesters: []string{alice}},
		"clarify":                     {Kind: gh.GateKindClarify, Tool: "email_send", Requesters: []string{alice}},
		"incident":                    {Kind: gh.GateKindIncident, Tool: "email_send", Requesters: []string{alice}},
		// A library card has no requesters; alice sent the file.
		"library": {Kind: gh.GateKindLibrary, Tool: "library_add", Arguments: libArgs},
	}
	// want[mode][kind] lists who decides, of alice, bob, carol, in the
	// chat and in the approvers' chat alike; the operator always does.
	all := "abc"
	want := map[string]map[string]string{
		"unset":                  {"approval": "a", "clarify": "a", "incident": "a", "library": "", "library over the operator's": ""},
		"allowed":                {"approval": all, "clarify": all, "incident": all, "library": "bc", "library over the operator's": ""},
		"named":                  {"approval": "ac", "clarify": "ac", "incident": "ac", "library": "c", "library over the operator's": ""},
		"tool allowed":           {"approval": all, "clarify": all, "incident": all, "library": "bc", "library over the operator's": ""},
		"tool named":             {"approval": "ac", "clarify": "ac", "incident": "ac", "library": "c", "library over the operator's": ""},
		"requester off":          {"approval": "c", "clarify": "c", "incident": "c", "library": "c", "library over the operator's": ""},
		"requester off allowed":  {"approval": "bc", "clarify": "bc", "incident": "bc", "library": "bc", "library over the operator's": ""},
		"requester off for tool": {"approval": "c", "clarify": "c", "incident": "c", "library": "c", "library over the operator's": ""},
		"requester on for tool":  {"approval": "ac", "clarify": "ac", "incident": "ac", "library": "c", "library over the operator's": ""},
	}
	users := map[byte]string{'a': "1", 'b': "2", 'c': "3"}
	for mode, rules := range modes {
		for kind, o := range kinds {
			for _, where := range []people.Where{people.InChat, people.InApprovalChat} {
				got := ""
				for _, who := range []byte("abc") {
					if rules.MayDecide(o, people.Presser{Where: where, Platform: "telegram", UserID: users[who]}) {
						got += string(who)
					}
				}
				if got != want[mode][kind] {
					t.Errorf("%s, %s card, surface %d: decided by %q, want %q", mode, kind, where, got, want[mode][kind])
				}
			}
			if !rules.MayDecide(o, people.Presser{Where: people.ByOperator}) {
				t.Errorf("%s, %s card: the operator may not decide", mode, kind)
			}
			// Someone named on another platform is someone else.
			if rules.MayDecide(o, people.Presser{Where: people.InChat, Platform: "slack", UserID: "3"}) && !rules.For(o.Tool).Allowed {
				t.Errorf("%s, %s card: slack:3 decides as telegram:3", mode, kind)
			}
		}
	}
	_ = carol
}

func TestWhoDecidesAndNeeded(t *testing.T) {
	o := gh.GateOpened{Kind: gh.GateKindApproval, Tool: "email_send", Requesters: []string{people.UserKey("telegram", "1")}}
	named := people.ApproverRule{Users: []people.Approver{{Platform: "slack", UserID: "U012"}}}
	for _, c := range []struct {
		a    people.Approvers
		want string
	}{
		{people.Approvers{Default: named}, "only the person who asked for it or an approver (slack:U012) or the operator in the web UI can."},
		{people.Approvers{Default: named, RequesterOff: map[string]bool{"EMAIL_SEND": true}}, "only an approver (slack:U012) or the operator in the web UI can."},
		{people.Approvers{}, "only the person who asked for it or the operator in the web UI can."},
	} {
		if got := c.a.WhoDecides(o); got != "You cannot decide this card: "+c.want {
			t.Errorf("%+v: %q", c.a, got)
		}
	}
	a := people.Approvers{NeededBy: map[string]int{"": 2, "SHELL_EXEC": 3}}
	if a.Needed("email_send") != 2 || a.Needed("shell_exec") != 3 || (people.Approvers{}).Needed("x") != 1 {
		t.Fatal(fmt.Sprint("needed: ", a.Needed("email_send"), a.Needed("shell_exec")))
	}
}
