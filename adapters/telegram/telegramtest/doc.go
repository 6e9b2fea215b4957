// Package telegramtest is a fake Telegram Bot API for tests: TelegramFake
// is a real server on loopback (getUpdates long polling, or webhook
// deliveries to an adapter's handler; sendMessage, editMessageText,
// answerCallbackQuery with their HTML and keyboard rules; setMyCommands
// with its name and description rules; commands sent by users with their
// bot_command entity), strict about what Telegram refuses. It implements
// adaptertest.Fake; TelegramFactory and TelegramWebhookFactory hand it,
// with an adapter aimed at it, to the shared suite adaptertest.Run. Its
// own tests hold it to Telegram's rules with the go-telegram/bot client
// and raw HTTP. Telegram's HTML parse mode is in tghtml; what the fakes
// share (parameters, refusals, webhook posts) in adapters/internal/platformfake.
package telegramtest
