package people_test

import (
	"testing"

	"github.com/gatehouse/gatehouse/gateway/people"
)

func TestParseApprovers(t *testing.T) {
	r, err := people.ParseApprovers(" telegram:111 , Slack:U012,telegram:111,", "telegram", "slack")
	if err != nil || r.Allowed || len(r.Users) != 2 || r.Users[0] != (people.Approver{Platform: "telegram", UserID: "111"}) ||
		r.Users[1] != (people.Approver{Platform: "slack", UserID: "U012"}) {
		t.Fatalf("%+v %v", r, err)
	}
	if r, err := people.ParseApprovers("Allowed"); err != nil || !r.Allowed || len(r.Users) != 0 {
		t.Fatalf("allowed: %+v %v", r, err)
	}
	if r, err := people.ParseApprovers(""); err != nil || r.Allowed || len(r.Users) != 0 {
		t.Fatalf("empty: %+v %v", r, err)
	}
	for _, bad := range []string{"111", "telegram:", ":111", "telegram:1 1", "allowed,telegram:1", "icq:5"} {
		if _, err := people.ParseApprovers(bad, "telegram", "slack"); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	if people.ToolKey("email_send") != "EMAIL_SEND" || people.ToolKey("files__read-file") != "FILES__READ_FILE" {
		t.Fatal("tool keys")
	}
	a := people.Approvers{Default: people.ApproverRule{Allowed: true},
		Tools: map[string]people.ApproverRule{"EMAIL_SEND": {Users: []people.Approver{{Platform: "slack", UserID: "U1"}}}}}
	if !a.For("shell_exec").Allowed || a.For("email_send").Allowed || a.For("Email-Send").Users[0].UserID != "U1" {
		t.Fatalf("rules by tool: %+v", a)
	}
	if people.UserKey("telegram", "111") != "telegram:"+people.PseudonymousUserID("telegram", "111") {
		t.Fatal("user keys are the log's")
	}
}
