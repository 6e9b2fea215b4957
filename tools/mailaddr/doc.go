// Package mailaddr reads a mail address the way a mail server will, and
// says what about it a person approving a send should know.
//
// A card that shows "sаra@example.com" (a Cyrillic а) or
// "sara@example.com。evil.test" (U+3002, which IDNA reads as a dot) looks
// like "sara@example.com" and is not. [Parse] applies the UTS #46 mapping
// to the domain once, and the result is both what the card shows and what
// the send uses: email_send's card (tools.Present) and its SMTP envelope
// come from the same [Address], so what is approved is what is sent,
// byte for byte. [Address.Notes] are the card's warning lines: an address
// that is not plain ASCII, with the domain's A-label (xn--…) form and each
// non-ASCII character as U+XXXX; a label that mixes scripts; a domain the
// mapping rewrote.
package mailaddr
