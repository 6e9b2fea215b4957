-- +goose Up
CREATE TABLE sessions (
    id                  TEXT PRIMARY KEY,
    tenant              TEXT NOT NULL,
    title               TEXT NOT NULL DEFAULT '',
    last_seq            BIGINT NOT NULL DEFAULT 0,
    last_input_seq      BIGINT NOT NULL DEFAULT 0,
    read_watermark      BIGINT NOT NULL DEFAULT 0,
    compaction_seq      BIGINT NOT NULL DEFAULT 0,
    epoch               BIGINT NOT NULL DEFAULT 0,
    created_at          TIMESTAMPTZ NOT NULL,
    updated_at          TIMESTAMPTZ NOT NULL
);
CREATE INDEX sessions_tenant_updated ON sessions (tenant, updated_at DESC);

CREATE TABLE events (
    session_id  TEXT NOT NULL,
    seq         BIGINT NOT NULL,
    kind        TEXT NOT NULL,
    payload     JSONB NOT NULL,
    idem_key    TEXT,
    created_at  TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (session_id, seq)
);
CREATE UNIQUE INDEX events_idem_key ON events (session_id, idem_key) WHERE idem_key IS NOT NULL;

CREATE TABLE runs (
    id                BIGSERIAL PRIMARY KEY,
    session_id        TEXT NOT NULL,
    state             TEXT NOT NULL,
    attempts          INT NOT NULL DEFAULT 0,
    max_attempts      INT NOT NULL,
    owner             TEXT NOT NULL DEFAULT '',
    epoch             BIGINT NOT NULL DEFAULT 0,
    lease_expires_at  TIMESTAMPTZ,
    read_watermark    BIGINT NOT NULL DEFAULT 0,
    cancel_requested  BOOLEAN NOT NULL DEFAULT FALSE,
    reason            TEXT NOT NULL DEFAULT '',
    available_at      TIMESTAMPTZ NOT NULL,
    created_at        TIMESTAMPTZ NOT NULL,
    updated_at        TIMESTAMPTZ NOT NULL
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
