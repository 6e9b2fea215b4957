// Package tourscript is the built-in tour's script and what needs no
// model types to read it: the embedded tour.json (the demo contacts and
// the scenes), picking a scene for a message, the closing line for a
// call's result, and the signer of the tour's tool call ids (so only the
// tour's own calls reach its dev mailbox). Package models runs it as the
// scripted provider's "tour" model.
package tourscript
