// Package uploads adds files sent in a chat to the knowledge library
// when the person asks: the /library command (a Telegram document's
// caption or a reply to one, "!library" or "/library" with a Slack or
// Discord file).
//
// It owns the whole of that path and nothing else:
//
//   - /library adds the files to the chat's own collection at once and
//     answers, on the surface that sent them, what was added or why it
//     was not (too large, not text, an encrypted or broken PDF, a zip
//     bomb). Nothing is ever added without the command.
//   - /library shared asks for the shared collection, which every chat
//     reads and the agent trusts: the file is fetched and checked first
//     (a file that could never be added is refused at once), then a card
//     of kind gh.GateKindLibrary goes to the approvers, like a danger
//     tool's. The requester is not one of its deciders: only an approver
//     named for the tool library_add, or the operator in the web UI,
//     decides it. First decision wins, as for every card.
//   - A file that would replace a shared document of the same name
//     says so on its card: the document, its current and new size and
//     SHA-256, and the first passage of the new text. Replacing a
//     document the operator put there (any source but a chat) needs the
//     operator's approval on the web UI or the API: the card records it
//     (gh.LibraryNeedsOperator), and the add refuses, telling the chat
//     why, when the approval came from anywhere else.
//   - The card's decision is logged by this package (gates.Kind, registered by New),
//     outside any run. An approval fetches the file again, adds it only
//     if its bytes are the ones checked (what was approved is what is
//     added), and tells the chat the outcome as a notice; a denial or
//     an expiry tells the chat it was not added.
package uploads
