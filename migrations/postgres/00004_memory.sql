-- +goose Up
-- Memory: facts remembered about users, their term index for lexical
-- recall, and the queued model passes.

-- One row per user: writes of a user's facts lock it (serialising them), and
-- it keeps the live-fact counts lexical recall needs without a scan.
CREATE TABLE memory_users (
    user_key  TEXT PRIMARY KEY,
    facts     INTEGER NOT NULL DEFAULT 0,
    terms     BIGINT NOT NULL DEFAULT 0
);

-- One row per (user, subject): a newer observation replaces it in place.
-- deleted_at is NULL while the fact is live. terms lists the indexed terms
-- (space separated) so their postings can be removed by key. Subjects and
-- terms compare byte-wise (COLLATE "C"), as on SQLite, so a subject prefix
-- is an index range.
CREATE TABLE memory_facts (
    id                 BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_key           TEXT NOT NULL,
    subject            TEXT COLLATE "C" NOT NULL,
    kind               TEXT NOT NULL,
    text               TEXT NOT NULL,
    value              TEXT NOT NULL DEFAULT '',
    source_session_id  TEXT NOT NULL DEFAULT '',
    source_seq         BIGINT NOT NULL DEFAULT 0,
    observed_at        TIMESTAMPTZ NOT NULL,
    created_at         TIMESTAMPTZ NOT NULL,
    deleted_at         TIMESTAMPTZ,
    terms              TEXT NOT NULL DEFAULT '',
    length             INTEGER NOT NULL DEFAULT 0,
    embedding_model    TEXT NOT NULL DEFAULT '',
    embedding          BYTEA
);
CREATE UNIQUE INDEX memory_facts_subject ON memory_facts (user_key, subject);

-- How many live facts of a user hold each term (BM25's document
-- frequency), so a scorer can weigh the asked terms without reading their
-- postings.
CREATE TABLE memory_dict (
    user_key  TEXT NOT NULL,
    term      TEXT COLLATE "C" NOT NULL,
    df        INTEGER NOT NULL,
    PRIMARY KEY (user_key, term)
);

-- Postings of live facts only.
CREATE TABLE memory_terms (
    user_key  TEXT NOT NULL,
    term      TEXT COLLATE "C" NOT NULL,
    fact_id   BIGINT NOT NULL,
    tf        INTEGER NOT NULL,
    length    INTEGER NOT NULL,
    PRIMARY KEY (user_key, term, fact_id)
);

CREATE TABLE memory_jobs (
    id            BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    user_key      TEXT NOT NULL,
    session_id    TEXT NOT NULL DEFAULT '',
    seq           BIGINT NOT NULL DEFAULT 0,
    observed_at   TIMESTAMPTZ NOT NULL,
    user_text     TEXT NOT NULL DEFAULT '',
    answer_text   TEXT NOT NULL DEFAULT '',
    state         TEXT NOT NULL,
    attempts      INTEGER NOT NULL DEFAULT 0,
    max_attempts  INTEGER NOT NULL,
    owner         TEXT NOT NULL DEFAULT '',
    available_at  TIMESTAMPTZ NOT NULL,
    last_error    TEXT NOT NULL DEFAULT '',
    created_at    TIMESTAMPTZ NOT NULL,
    updated_at    TIMESTAMPTZ NOT NULL
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
