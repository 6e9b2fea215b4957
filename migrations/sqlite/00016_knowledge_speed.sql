-- +goose Up
-- The knowledge library's lexical index, leaner: FTS5 keeps which
-- passages hold each term, not where (detail=none). Recall ranks in Go by
-- the terms a passage holds and never asks FTS5 for positions or bm25(),
-- and the index is a fraction of the size to write, merge and read.
-- Segments merge 8 at a time (automerge; 4 by default), so a passage's
-- entries are rewritten fewer times as the index grows.
CREATE VIRTUAL TABLE knowledge_fts_lean USING fts5(terms, content='', contentless_delete=1, detail=none,
    tokenize='unicode61 remove_diacritics 0');
-- The passages' terms, read back from the old index's instances.
CREATE VIRTUAL TABLE temp.knowledge_fts_instances USING fts5vocab(main, knowledge_fts, 'instance');
INSERT INTO knowledge_fts_lean (rowid, terms)
    SELECT doc, group_concat(term, ' ') FROM (SELECT DISTINCT doc, term FROM temp.knowledge_fts_instances) GROUP BY doc;
DROP TABLE temp.knowledge_fts_instances;
DROP TABLE knowledge_vocab;
DROP TABLE knowledge_fts;
ALTER TABLE knowledge_fts_lean RENAME TO knowledge_fts;
CREATE VIRTUAL TABLE knowledge_vocab USING fts5vocab(knowledge_fts, 'row');
INSERT INTO knowledge_fts (knowledge_fts, rank) VALUES ('automerge', 8);

-- generation rises with every write of the index, in its transaction: a
-- cache of term counts (fts5vocab reads a term's whole doclist to count
-- it) is good while it stands.
ALTER TABLE knowledge_stats ADD COLUMN generation INTEGER NOT NULL DEFAULT 0;

-- +goose Down
ALTER TABLE knowledge_stats DROP COLUMN generation;
CREATE VIRTUAL TABLE knowledge_fts_full USING fts5(terms, content='', contentless_delete=1, tokenize='unicode61 remove_diacritics 0');
CREATE VIRTUAL TABLE temp.knowledge_fts_rows USING fts5vocab(main, knowledge_fts, 'instance');
INSERT INTO knowledge_fts_full (rowid, terms)
    SELECT doc, group_concat(term, ' ') FROM (SELECT DISTINCT doc, term FROM temp.knowledge_fts_rows) GROUP BY doc;
DROP TABLE temp.knowledge_fts_rows;
DROP TABLE knowledge_vocab;
DROP TABLE knowledge_fts;
ALTER TABLE knowledge_fts_full RENAME TO knowledge_fts;
CREATE VIRTUAL TABLE knowledge_vocab USING fts5vocab(knowledge_fts, 'row');
