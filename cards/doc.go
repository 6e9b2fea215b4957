// Package cards owns what an approval card and a chat answer say as text
// on a chat platform: the body of a card (the tool and the arguments that
// will run, or the question asked), the line a decided card ends with, a
// card clipped to fit one message, and an answer split into parts that
// each fit. Text is built plain; the adapter escapes its markup at the end
// (the format func passed in), and every length is counted after that.
//
// It stands apart from the gateway so that what a card says can change
// without touching receiving or dispatching: the gateway builds a card's
// buttons and sends it, this package writes its words. The next change to
// cards (every argument that decides the effect shown whole and escaped)
// lands here.
package cards
