// Package cards owns what an approval card and a chat answer say as text
// on a chat platform: the body of a card (the tool and its fields — each
// argument that decides the effect, as the tool worker committed them in
// gate.opened — or the question asked), the line a decided card ends
// with, a card fitted to one message, and an answer split into parts that
// each fit. Text is built plain; the adapter escapes its markup at the end
// (the format func passed in), and every length is counted after that.
//
// What a card shows is what runs: fields are never clipped except free
// text (a body), which is cut only to fit, marked, with where to read the
// whole card ([Where]); characters a reader cannot see (controls, bidi
// overrides, zero-width and other default-ignorable characters) are
// written as escapes ([Visible]). [Need] and [Frame] let the tool worker
// refuse, before any card, a call whose card could not show a field whole.
//
// It stands apart from the gateway so that what a card says can change
// without touching receiving or dispatching: the gateway builds a card's
// buttons and sends it, this package writes its words.
package cards
