package gatehouse

import "time"

// Grants ("Approve for this chat"): a person who approves a call of a tool
// that declares a grantable bound (tools.Grantable) may approve it for the
// chat. The gate is approved with Decision.Answer set to [ScopeChat]; the
// tool worker then records the grant (grant.created and a grants row, in
// one transaction) before the call runs, and a later call of the same tool
// in the same session whose bound is the same runs without a card until
// the grant expires or is revoked (grant.revoked).

// ScopeChat is the Answer of an approval decided "Approve for this chat".
const ScopeChat = "for this chat"

// GrantCreated is the payload of grant.created, keyed "grant:<gateId>".
type GrantCreated struct {
	GrantID string `json:"grantId"`
	GateID  string `json:"gateId"`
	Tool    string `json:"tool"`
	// Bound is the tool's canonical bound ("sara@example.com" for
	// email_send: the sorted recipient addresses); Label says it in words.
	Bound     string    `json:"bound"`
	Label     string    `json:"label"`
	By        string    `json:"by"`
	Surface   string    `json:"surface"`
	ExpiresAt time.Time `json:"expiresAt"`
}

// GrantRevoked is the payload of grant.revoked, keyed "grantrevoke:<id>".
type GrantRevoked struct {
	GrantID string `json:"grantId"`
	Tool    string `json:"tool"`
	By      string `json:"by"`
	Surface string `json:"surface"`
}

// GrantUsedText is what a call run under a grant says in its result.
func GrantUsedText(by string, until time.Time) string {
	return "Ran under the grant from " + by + " for this chat, until " + until.UTC().Format("15:04 MST") + "; no card was shown."
}
