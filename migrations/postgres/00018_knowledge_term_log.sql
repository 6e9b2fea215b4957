-- +goose Up
-- The knowledge library's term counts, written in batches: a document's
-- terms and how many of its passages hold each go in as one row of
-- knowledge_term_log (one JSONB object, term → count, however many
-- terms; its keys are sorted, so a term is found by a binary search and
-- a recall reads only the terms it asks for), and every
-- writer that finds 32 rows there folds them into knowledge_terms in its
-- transaction (a term shared by many of them is one update, not one per
-- document). A term's document frequency is its knowledge_terms row plus
-- its entries in the log. pending counts the rows of the log; every
-- writer of the library holds the knowledge_stats row, so it is exact.
CREATE TABLE knowledge_term_log (
    id      BIGSERIAL PRIMARY KEY,
    counts  JSONB NOT NULL
);
ALTER TABLE knowledge_stats ADD COLUMN pending INTEGER NOT NULL DEFAULT 0;

-- +goose Down
INSERT INTO knowledge_terms (term, df)
    SELECT e.key, SUM(e.value::bigint) FROM knowledge_term_log l, jsonb_each_text(l.counts) e GROUP BY e.key
    ON CONFLICT (term) DO UPDATE SET df = knowledge_terms.df + excluded.df;
DROP TABLE knowledge_term_log;
ALTER TABLE knowledge_stats DROP COLUMN pending;
