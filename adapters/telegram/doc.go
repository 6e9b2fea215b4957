// Package telegram is Gatehouse's Telegram adapter: it turns Bot API
// updates into [gh.Inbound] and [gh.Press] for the gateway, and sends
// messages and approval cards with inline keyboards.
//
// It owns only the translation. Deduplication, allow-lists, the flood
// guard, sessions, the outbox and rate limiting are the gateway's.
//
// Updates arrive one of two ways, chosen by [Config.WebhookSecret]:
//
//   - Long polling (no secret): [Adapter.Connect] calls getUpdates itself
//     and moves the offset past an update only after the sink's Receive (or
//     Press) returned nil for it. Telegram confirms every update below the
//     offset of the next getUpdates call, so an update whose commit failed
//     is fetched again, and so is everything after it: updates are handled
//     strictly in order. The go-telegram/bot library's own polling loop
//     (bot.Start) cannot give this guarantee: it stores the offset before a
//     handler runs and ignores handler errors, so this package does not use
//     it. The library still makes every other call (sendMessage,
//     editMessageText, answerCallbackQuery, setWebhook, setMyCommands,
//     getMe) and its models parse updates.
//   - Webhook (secret set): [Adapter.Handler] checks the
//     X-Telegram-Bot-Api-Secret-Token header in constant time (401 when it
//     is wrong), commits the update and answers 200 only after the sink
//     returned nil; otherwise 500, and Telegram delivers it again. The
//     library's own WebhookHandler is not used: it answers 200 even to a
//     wrong secret and before the update is handled.
//
// Status from evidence: every getUpdates goes to the sink's Health (nil
// when Telegram answered, the error when not, a 401 as chat.TokenRefused),
// and so does the setWebhook at start. A poll that comes back early and
// empty (a server that does not hold polls) is followed by a pause that
// grows to 5 s, a failed one by 0.5–15 s, a refused token by 30 s–10 min
// (inbound.go). [Adapter.Probe] asks getMe; [Adapter.ProbeWebhook] asks
// getWebhookInfo whether Telegram still delivers to us.
//
// Button presses are callback queries: the button data is parsed with
// chat.ParseButtonData, the press goes to the sink, and the query is
// answered at once with the press result's text. A button that is not ours
// is answered with a short notice and otherwise ignored.
//
// "Deny with reason…" asks for the reason: when the gateway answers the
// press with AskReason, the adapter posts, as a reply to the card, a
// message with force_reply that ends "(card <gate id>)". A user's reply to
// that message, when the bot (the token's first part is its id) sent it,
// is not an inbound message but a deny press with the reply's text as
// its reason; a refusal is answered with a reply.
//
// Chat commands: a message that starts with the command /grants (a
// bot_command entity at offset 0, "/grants" or "/grants@<this bot>"; the
// bot's username comes from getMe the first time a command names a bot)
// goes to the sink's Command, not Receive, with Text what follows the
// command; the update is acknowledged once Command returned nil. Unless
// the gateway refused the sender or had answered the update before, its
// answer (plain text, escaped) is sent as a reply to the command, in its
// forum topic, with the answer's buttons (Revoke, pressed like a card's
// buttons); a failed answer is logged, not retried. "/grants@otherbot"
// and every other command are ordinary messages. [Adapter.Connect]
// registers /grants with setMyCommands once per start, in both modes,
// retrying beside the inbound side so that it never holds updates back.
//
// Text goes out with parse_mode HTML; [Adapter.Format] escapes it so that
// nothing in user or model text is read as markup.
package telegram
