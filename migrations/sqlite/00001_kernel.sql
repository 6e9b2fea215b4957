-- +goose Up
-- Times are Unix microseconds (UTC) so comparisons are integer compares.
CREATE TABLE sessions (
    id                  TEXT PRIMARY KEY,
    tenant              TEXT NOT NULL,
    title               TEXT NOT NULL DEFAULT '',
    last_seq            INTEGER NOT NULL DEFAULT 0,
    last_input_seq      INTEGER NOT NULL DEFAULT 0,
    read_watermark      INTEGER NOT NULL DEFAULT 0,
    compaction_seq      INTEGER NOT NULL DEFAULT 0,
    epoch               INTEGER NOT NULL DEFAULT 0,
    created_at          INTEGER NOT NULL,
    updated_at          INTEGER NOT NULL
) WITHOUT ROWID;
CREATE INDEX sessions_tenant_updated ON sessions (tenant, updated_at DESC);

CREATE TABLE events (
    session_id  TEXT NOT NULL,
    seq         INTEGER NOT NULL,
    kind        TEXT NOT NULL,
    payload     TEXT NOT NULL,
    idem_key    TEXT,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (session_id, seq)
) WITHOUT ROWID;
CREATE UNIQUE INDEX events_idem_key ON events (session_id, idem_key) WHERE idem_key IS NOT NULL;

CREATE TABLE runs (
    id                INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id        TEXT NOT NULL,
    state             TEXT NOT NULL,
    attempts          INTEGER NOT NULL DEFAULT 0,
    max_attempts      INTEGER NOT NULL,
    owner             TEXT NOT NULL DEFAULT '',
    epoch             INTEGER NOT NULL DEFAULT 0,
    lease_expires_at  INTEGER NOT NULL DEFAULT 0,
    read_watermark    INTEGER NOT NULL DEFAULT 0,
    cancel_requested  INTEGER NOT NULL DEFAULT 0,
    reason            TEXT NOT NULL DEFAULT '',
    available_at      INTEGER NOT NULL,
    created_at        INTEGER NOT NULL,
    updated_at        INTEGER NOT NULL
);
-- The thread lock: at most one active run per session.
CREATE UNIQUE INDEX runs_one_active ON runs (session_id) WHERE state IN ('queued', 'running', 'awaiting_approval');
CREATE INDEX runs_queued ON runs (available_at, id) WHERE state = 'queued';
CREATE INDEX runs_running ON runs (lease_expires_at) WHERE state = 'running';
CREATE INDEX runs_session ON runs (session_id, id DESC);

-- +goose Down
DROP TABLE runs;
DROP TABLE events;
DROP TABLE sessions;
