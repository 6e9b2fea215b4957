// Package platformfake holds what the platform fakes (telegramtest,
// discordtest, slacktest) would otherwise each write again: reading a
// Web API call's parameters from a query, form, multipart or JSON body
// (ReadParams); the record of what a fake refused and what it slowed
// with 429 (Refusals); a server-side websocket whose writes are
// serialized (WSConn, Upgrade); posting a delivery to an adapter's
// webhook and reading the status it answered (Post); and serving an
// adapter's webhook handler while its Connect runs (Mount). It knows no
// platform's rules: those stay in each fake.
package platformfake
