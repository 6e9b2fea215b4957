package telegram

// The loops' policies, so tests bound a loop's calls with them rather
// than with figures of their own.
var (
	EmptyPollPolicy = emptyPollPolicy
	PollErrorPolicy = pollErrorPolicy
	RefusedPolicy   = refusedPolicy
)
