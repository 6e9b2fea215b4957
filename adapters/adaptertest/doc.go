// Package adaptertest is what every chat adapter is tested against: the
// Fake interface a platform's fake server implements (the fakes live
// next to their adapters: adapters/telegram/telegramtest,
// adapters/discord/discordtest, adapters/slackchat/slacktest), and the shared
// suite Run every adapter passes.
//
// The suite drives a whole gateway, but this package does not build one:
// it imports neither the supervisor nor any concrete adapter. The caller
// passes the stack in (internal/testing/stacktest.Stack), so a test reads
//
//	adaptertest.Run(t, stacktest.Stack, telegramtest.TelegramFactory)
//
// Connect, Eventually (internal/testing/testenv's) and LogWriter are small
// helpers the fakes and the adapters' own tests share.
package adaptertest
