-- +goose Up
-- The knowledge library: documents in collections, their passages with a
-- tsvector under a GIN index, and the library's counts for BM25.

-- One row per collection that has had documents; version rises with every
-- change, so a replica's cache of its vectors knows when to reload.
CREATE TABLE knowledge_collections (
    name        TEXT PRIMARY KEY,
    version     BIGINT NOT NULL DEFAULT 0,
    updated_at  TIMESTAMPTZ NOT NULL
);

CREATE TABLE knowledge_documents (
    id          BIGSERIAL PRIMARY KEY,
    collection  TEXT NOT NULL,
    name        TEXT NOT NULL,
    title       TEXT NOT NULL,
    media_type  TEXT NOT NULL,
    source      TEXT NOT NULL,
    hash        TEXT NOT NULL,
    version     INTEGER NOT NULL,
    size        BIGINT NOT NULL,
    passages    INTEGER NOT NULL,
    added_by    TEXT NOT NULL DEFAULT '',
    indexed_at  TIMESTAMPTZ NOT NULL,
    created_at  TIMESTAMPTZ NOT NULL
);
CREATE UNIQUE INDEX knowledge_documents_name ON knowledge_documents (collection, name);

-- tsv holds the passage's terms (lower-cased and stemmed by the library)
-- as lexemes, built with array_to_tsvector so Postgres parses nothing:
-- both stores index exactly the same terms. length is the term count
-- with repeats.
CREATE TABLE knowledge_passages (
    id               BIGSERIAL PRIMARY KEY,
    document_id      BIGINT NOT NULL REFERENCES knowledge_documents (id) ON DELETE CASCADE,
    collection       TEXT NOT NULL,
    ord              INTEGER NOT NULL,
    heading          TEXT[] NOT NULL,
    text             TEXT NOT NULL,
    start_offset     INTEGER NOT NULL,
    end_offset       INTEGER NOT NULL,
    length           INTEGER NOT NULL,
    tsv              TSVECTOR NOT NULL,
    embedding_model  TEXT NOT NULL DEFAULT '',
    embedding        BYTEA
);
CREATE INDEX knowledge_passages_tsv ON knowledge_passages USING GIN (tsv);
CREATE INDEX knowledge_passages_document ON knowledge_passages (document_id, ord);
CREATE INDEX knowledge_passages_collection ON knowledge_passages (collection, id);

-- How many passages hold each term (BM25's document frequency): Postgres
-- has no cheap reading of it from a GIN index.
CREATE TABLE knowledge_terms (
    term  TEXT PRIMARY KEY,
    df    BIGINT NOT NULL
);

-- The library's passage count and summed lengths. Every write of the
-- library locks this row first, so writers of terms never deadlock.
CREATE TABLE knowledge_stats (
    id        INTEGER PRIMARY KEY CHECK (id = 1),
    passages  BIGINT NOT NULL,
    terms     BIGINT NOT NULL
);
INSERT INTO knowledge_stats (id, passages, terms) VALUES (1, 0, 0);

-- +goose Down
DROP TABLE knowledge_stats;
DROP TABLE knowledge_terms;
DROP TABLE knowledge_passages;
DROP TABLE knowledge_documents;
DROP TABLE knowledge_collections;
