// Package blockkit is Slack's Block Kit as the Slack fake (slacktest)
// checks it: the blocks of a message (sections, actions with their
// buttons, headers, context; text composition objects with their types
// and lengths) as Slack refuses them with invalid_blocks, a message's
// text rules (no_text, msg_too_long), and the modal views views.open
// takes, refused with invalid_arguments. Each check returns what is
// wrong in words; the fake owns the answer and what it keeps.
package blockkit
