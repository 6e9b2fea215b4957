// Package openaiapi serves Gatehouse as if it were a model, for
// third-party chat frontends and SDKs: POST /v1/chat/completions
// (streamed and not) and GET /v1/models, in OpenAI's wire format.
// httpapi mounts the Handler behind the API token (httpapi.Config.OpenAI);
// refusals of the token check are written here too (Handler.Refuse), so a
// client sees one error shape: {"error": {"message", "type", "code"}}.
//
// It owns: reading the request (openai-go's ChatCompletionNewParams for
// the messages; a strict shape check first, since that decoder accepts
// anything), the session a conversation maps to, the check of the
// client's history against the session's log, committing the new input
// (kernel.EdgeCommit of a user.message) or a regenerate (turn.retry),
// waiting for the turn's outcome on the kernel's feed, and answering it.
//
// Decisions, each documented in docs/api.md:
//
//   - Session. The header X-Gatehouse-Session names it; else the request's
//     user field does, hashed ("oai_" + 32 hex digits of SHA-256), so the
//     id is always valid and no user name enters the log. With neither the
//     request is refused (400): a default session would merge every
//     client's conversations into one log, and the second conversation
//     would only get 409s. The session is made on first use, for the
//     configured tenant, as POST /v1/sessions/{id}/input does. A chat
//     platform's session (tg_, dc_, …: gh.CheckEdgeSession) is refused
//     403 external-session before its log is read: only its chat writes
//     it, and its answers are not this client's.
//   - History. Clients resend the whole conversation; the last message
//     must be the user's and is the new input. The earlier user messages
//     must equal the log's user.message texts, in order (surrounding
//     white space ignored); each earlier assistant message must equal what
//     the agent said since the previous reply the client holds in full,
//     or be one of this endpoint's own status replies (an approval needed,
//     a wait that ran out, a turn ended without an answer) or a failure
//     the log holds: those hold no answer, so what the agent said then is
//     owed and comes with the next reply. Otherwise 409, saying how to
//     start a new conversation. System and developer messages are ignored
//     (Gatehouse has its own prompt and no place for a client's), as are
//     assistant messages before the first user message (a frontend's
//     greeting). Tool and function messages are refused (400): the agent's
//     tools are Gatehouse's, never the client's.
//   - Reply. A reply is everything the agent said (committed
//     assistant.message texts, joined by a blank line) since the last
//     reply the client holds in full, up to the answer to its last
//     message. A stream carries committed text only, never the model's
//     raw deltas: the answer safeguards (package answers) may change the
//     text that is committed, and the client must hold exactly what the
//     log holds for its next request to match.
//   - The same again. A last message equal to the log's last user message
//     (at the same place) is not committed again: while its answer is to
//     come, the request waits for it. Once it has one, it is a regenerate
//     and goes through the retry path: for a failed turn (and a failed
//     last run) a turn.retry keyed by the failed run, "openai:retry:<run>";
//     for an answer that did not fail, a turn.retry that names it
//     (TurnRetry.Replaces), keyed "openai:retry:<generationId>": the
//     supervisor then owes the input a fresh answer and the model never
//     sees the replaced one, which stays in the log but is no longer what
//     the agent said (conversation.replace), so a history holding it
//     mismatches. The same regenerate twice commits one retry. Because a
//     regenerate looks exactly like the first request, some are answered
//     as they are (isRegenerate): an SDK's own retry of a request
//     (X-Stainless-Retry-Count), and, unless this process gave the client
//     the answer, a turn whose client may only have had a status reply (a
//     card opened in it, or its answer came near MaxWait), for which the
//     same again is how the answer is fetched.
//   - Idempotency. A new input is committed with the key
//     "openai:turn:<n>" (n: its place among the session's user messages),
//     so two identical requests commit one user.message, and two different
//     ones racing for the same place get 409.
//   - Approval. When a pending gate holds the turn, the reply says so in
//     text: the card's body and its link under PublicURL
//     (cards.Link: <PublicURL>/admin#card=<id>), finish_reason "stop".
//     The next request (the same again, or anything more) waits for the
//     outcome after the decision; while the gate is still pending it gets
//     the same text again.
//   - Waiting is bounded by Config.MaxWait (default 5 minutes); then the
//     reply is what the agent said so far and how to go on.
//   - Model. GET /v1/models lists "gatehouse" (the configured model) and
//     Config.Selections; a request's model "gatehouse" (or none) commits
//     no selection, one of Selections is committed as the input's model
//     selection, any other is 404 model_not_found.
//   - Who asks. Input is committed as the API's (source "api", no user):
//     the token holder is the operator, as for POST /v1/sessions/{id}/input,
//     so the web chat and the API may decide its cards.
//
// The response bodies are small structs of this package rather than
// openai-go's response types: those have no omitempty, so encoding them
// sends zero-valued audio, function_call and moderation objects that
// clients read as present. The tests read every response with the
// official openai-go client.
package openaiapi
