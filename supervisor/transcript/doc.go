// Package transcript owns the supervisor's reading of a session's log: a
// pure function of its events (Decode) into the conversation a model sees
// (Messages) and the facts a turn is decided by — which input is unanswered,
// whether tool results are missing or the model owes an answer to them, the
// next answer's generation name, the reasoning level and model selection
// the inputs chose, who a tool batch is made for and whether outside text
// has been read since (AskerOf), and what each person said, for memory
// (TurnForMemory).
//
// A regenerate (a turn.retry that names the answer it replaces) takes that
// final answer out of the reading: its inputs are unanswered again and the
// model never sees it, while its name still counts, so the fresh answer is
// named apart. The tool calls of the turn and their results stay, so a
// regenerate writes a new answer from them and repeats no effect.
//
// It does no I/O and commits nothing: the supervisor commits, then records
// what it committed here (the Add methods), so the transcript stays the
// attempt's view of the log. Everything is derived from the log, so a
// retried attempt derives the same names, askers and turns.
package transcript
