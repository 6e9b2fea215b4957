package slackchat

import "strings"

// FormatCard renders an approval card's text for Slack literally: &, <
// and > escaped (so "<!channel>", "<@U123>" and "<http://x|y>" can never
// form) and nothing turned into mrkdwn. The card's blocks show it as
// plain_text (see cardBlocks), where *, _ and ~ stay as written. It
// implements chat.CardFormatter.
func (a *Adapter) FormatCard(text string) string { return FormatLiteral(text) }

// FormatLiteral is [Adapter.FormatCard] without an adapter.
func FormatLiteral(text string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(text)
}
