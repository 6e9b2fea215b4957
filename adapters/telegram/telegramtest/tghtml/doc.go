// Package tghtml is Telegram's HTML parse mode as the Telegram fake
// (telegramtest) reads a message sent with parse_mode HTML: which tags
// and entities it takes, what the user then sees, the message entities
// (UTF-16 offsets) it makes, and the description Telegram refuses a text
// with ("Unsupported start tag …", "Can't find end tag …"). Parse is a
// pure function; the fake owns what is done with its result.
package tghtml
