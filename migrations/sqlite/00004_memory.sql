-- +goose Up
-- Memory: facts remembered about users, their term index for lexical
-- recall, and the queued model passes. Times are Unix microseconds (UTC).

-- One row per user: writes of a user's facts lock it (serialising them), and
-- it keeps the live-fact counts lexical recall needs without a scan.
CREATE TABLE memory_users (
    user_key  TEXT PRIMARY KEY,
    facts     INTEGER NOT NULL DEFAULT 0,
    terms     INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;

-- One row per (user, subject): a newer observation replaces it in place.
-- deleted_at is 0 while the fact is live. terms lists the indexed terms
-- (space separated) so their postings can be removed by key.
CREATE TABLE memory_facts (
    id                 INTEGER PRIMARY KEY,
    user_key           TEXT NOT NULL,
    subject            TEXT NOT NULL,
    kind               TEXT NOT NULL,
    text               TEXT NOT NULL,
    value              TEXT NOT NULL DEFAULT '',
    source_session_id  TEXT NOT NULL DEFAULT '',
    source_seq         INTEGER NOT NULL DEFAULT 0,
    observed_at        INTEGER NOT NULL,
    created_at         INTEGER NOT NULL,
    deleted_at         INTEGER NOT NULL DEFAULT 0,
    terms              TEXT NOT NULL DEFAULT '',
    length             INTEGER NOT NULL DEFAULT 0,
    embedding_model    TEXT NOT NULL DEFAULT '',
    embedding          BLOB
);
CREATE UNIQUE INDEX memory_facts_subject ON memory_facts (user_key, subject);

-- How many live facts of a user hold each term (BM25's document
-- frequency), so a scorer can weigh the asked terms without reading their
-- postings.
CREATE TABLE memory_dict (
    user_key  TEXT NOT NULL,
    term      TEXT NOT NULL,
    df        INTEGER NOT NULL,
    PRIMARY KEY (user_key, term)
) WITHOUT ROWID;

-- Postings of live facts only.
CREATE TABLE memory_terms (
    user_key  TEXT NOT NULL,
    term      TEXT NOT NULL,
    fact_id   INTEGER NOT NULL,
    tf        INTEGER NOT NULL,
    length    INTEGER NOT NULL,
    PRIMARY KEY (user_key, term, fact_id)
) WITHOUT ROWID;

CREATE TABLE memory_jobs (
    id            INTEGER PRIMARY KEY,
    user_key      TEXT NOT NULL,
    session_id    TEXT NOT NULL DEFAULT '',
    seq           INTEGER NOT NULL DEFAULT 0,
    observed_at   INTEGER NOT NULL,
    user_text     TEXT NOT NULL DEFAULT '',
    answer_text   TEXT NOT NULL DEFAULT '',
    state         TEXT NOT NULL,
    attempts      INTEGER NOT NULL DEFAULT 0,
    max_attempts  INTEGER NOT NULL,
    owner         TEXT NOT NULL DEFAULT '',
    available_at  INTEGER NOT NULL,
    last_error    TEXT NOT NULL DEFAULT '',
    created_at    INTEGER NOT NULL,
    updated_at    INTEGER NOT NULL
);
-- One job per turn.
CREATE UNIQUE INDEX memory_jobs_turn ON memory_jobs (user_key, session_id, seq) WHERE session_id <> '';
CREATE INDEX memory_jobs_due ON memory_jobs (available_at, id) WHERE state IN ('queued', 'running');
CREATE INDEX memory_jobs_user ON memory_jobs (user_key, id);

-- +goose Down
DROP TABLE memory_jobs;
DROP TABLE memory_terms;
DROP TABLE memory_dict;
DROP TABLE memory_facts;
DROP TABLE memory_users;
