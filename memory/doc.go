// Package memory keeps what people tell the agent about themselves and uses
// it only when the evidence is strong.
//
// Write. When a turn closes, Remember runs a rule pass over what one person
// said in it, under that person's key (a turn that answered several people
// is remembered once per person, each with their own words; the answer and
// tool results are never read) — their name ("my name is …", "I'm …"), contacts with an email
// address ("Sara is sara@example.com", "Sara's email is …"), stated
// preferences ("I prefer …", "I like …", "always …", "never …") and
// "remember that …" — and, in the same transaction, queues a model pass as a
// job in the store, so it survives a restart. RunJobs (or Work) claims the
// jobs in batches, one person in one session at a time, once Config.Batch
// turns wait or the session has been quiet for Config.BatchIdle, and runs
// the model pass given to it once per batch; each fact it finds names its
// turn. Every fact carries the time its turn happened, and the store keeps one fact per (user, subject): a fact
// observed earlier than the one kept never replaces it, whatever order they
// are written in, and a forgotten subject comes back only from a turn after
// it was forgotten. So a late model pass cannot overwrite something the
// user said afterwards.
//
// Recall. Recall scores the user's facts against the question and returns
// those whose evidence clears Config.Floor: how much closer in meaning the
// fact is to the question than the background (embeddings from an
// OpenAI-compatible /embeddings endpoint when configured, a BM25 score over
// the user's facts otherwise), plus the share of the question's content
// words the fact holds. Each result carries its score parts.
//
// People see and remove what is kept with List, Forget and ForgetMatching;
// Contacts feeds the email_send commitment check. Tools gives the model
// remember and forget, which read and write the memory of the person whose
// call it is (tools.Call.User) only.
//
// The package reads no environment: cmd wires its Config.
package memory
