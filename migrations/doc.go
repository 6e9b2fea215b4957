// Package migrations holds the schema of each dialect as goose SQL files,
// embedded in the binary, and applies them: at start by each store and on
// demand by `gatehouse migrate`.
package migrations
