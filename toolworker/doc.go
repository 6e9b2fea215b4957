// Package toolworker runs one assistant message's tool calls for their
// asker (Asker: the person whose message led to them, their platform, and
// whether the turn has read outside text; each tools.Call carries them, so
// memory tools and the contact lookup touch that person's memory only), in
// this order for each call: can it run at all (unknown tool, switched off, arguments
// that fail the schema → an error result at once, no card); the commitment
// check (a per-tool policy allows, rewrites the arguments, asks a clarifying
// question with options, or refuses); the tier (a safe tool runs at once, unless it writes
// memory in a turn that has read outside text; a danger tool, and that one,
// open an approval gate — a gate row and a gate.opened event in
// one transaction — and the attempt settles awaiting approval, holding
// nothing); on resume the decision (approved runs, denied and expired
// answer so, never confusing the two), the approval bound to the exact
// arguments it was given for, and the effect journal so an approved effect
// runs at most once. Text that comes from outside is fenced as data before a
// model reads it. A grant ("Approve for this chat") covers a call only in a
// turn that has read no outside text; after outside text the call gets a
// card saying why (see grant.go).
package toolworker
