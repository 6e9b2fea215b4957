// Package sqlrow holds what the SQLite store and its memory rows share
// about running statements and reading rows: the querier they run on,
// the store's error wording, times as Unix microseconds (0 for none), and
// reading every row of a query.
package sqlrow
