-- +goose Up
-- The knowledge library: documents in collections, their passages, the
-- passages' FTS5 index, and the library's counts for BM25. Times are Unix
-- microseconds (UTC).

-- One row per collection that has had documents; version rises with every
-- change, so a replica's cache of its vectors knows when to reload.
CREATE TABLE knowledge_collections (
    name        TEXT PRIMARY KEY,
    version     INTEGER NOT NULL DEFAULT 0,
    updated_at  INTEGER NOT NULL
) WITHOUT ROWID;

CREATE TABLE knowledge_documents (
    id          INTEGER PRIMARY KEY,
    collection  TEXT NOT NULL,
    name        TEXT NOT NULL,
    title       TEXT NOT NULL,
    media_type  TEXT NOT NULL,
    source      TEXT NOT NULL,
    hash        TEXT NOT NULL,
    version     INTEGER NOT NULL,
    size        INTEGER NOT NULL,
    passages    INTEGER NOT NULL,
    added_by    TEXT NOT NULL DEFAULT '',
    indexed_at  INTEGER NOT NULL,
    created_at  INTEGER NOT NULL
);
CREATE UNIQUE INDEX knowledge_documents_name ON knowledge_documents (collection, name);

-- heading is a JSON array of the heading path. length is the passage's
-- indexed term count; the terms themselves live only in knowledge_fts.
CREATE TABLE knowledge_passages (
    id               INTEGER PRIMARY KEY,
    document_id      INTEGER NOT NULL,
    collection       TEXT NOT NULL,
    ord              INTEGER NOT NULL,
    heading          TEXT NOT NULL,
    text             TEXT NOT NULL,
    start_offset     INTEGER NOT NULL,
    end_offset       INTEGER NOT NULL,
    length           INTEGER NOT NULL,
    embedding_model  TEXT NOT NULL DEFAULT '',
    embedding        BLOB
);
CREATE INDEX knowledge_passages_document ON knowledge_passages (document_id, ord);
CREATE INDEX knowledge_passages_collection ON knowledge_passages (collection, id);

-- The lexical index: a passage's terms (space separated, already
-- lower-cased and stemmed by the library) under its id. Contentless, so
-- the terms are not stored twice; contentless_delete lets a replaced
-- passage go by rowid.
CREATE VIRTUAL TABLE knowledge_fts USING fts5(terms, content='', contentless_delete=1, tokenize='unicode61 remove_diacritics 0');
-- Each term's document frequency, kept by FTS5 itself.
CREATE VIRTUAL TABLE knowledge_vocab USING fts5vocab(knowledge_fts, 'row');

-- The library's passage count and summed lengths (BM25's average length).
CREATE TABLE knowledge_stats (
    id        INTEGER PRIMARY KEY CHECK (id = 1),
    passages  INTEGER NOT NULL,
    terms     INTEGER NOT NULL
);
INSERT INTO knowledge_stats (id, passages, terms) VALUES (1, 0, 0);

-- +goose Down
DROP TABLE knowledge_stats;
DROP TABLE knowledge_vocab;
DROP TABLE knowledge_fts;
DROP TABLE knowledge_passages;
DROP TABLE knowledge_documents;
DROP TABLE knowledge_collections;
