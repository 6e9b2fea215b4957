// Package pgknowledge owns the Postgres store's knowledge rows:
// collections, documents, passages with their tsvector (GIN), the
// document frequency of each term and the library's counts. It holds the
// SQL as functions over a Querier (the pool, or a transaction's
// connection), so the store keeps only thin methods. Every write locks the
// one knowledge_stats row first: writers of the library go one at a time,
// so their updates of shared term rows cannot deadlock.
package pgknowledge
