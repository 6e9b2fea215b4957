// Package textterms is the tokeniser memory and the knowledge library
// share: words of letters and digits, lower-cased; the stop words both
// drop (each adds a few of its own); the light stemmer that folds plurals.
// One copy, so a fix reaches both indexes; what each package indexes stays
// its own (memory folds "e-mail", the library bounds a term's length), and
// a change here changes the terms both stores hold, so it needs a reindex.
package textterms
