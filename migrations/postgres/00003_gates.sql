-- +goose Up
CREATE TABLE gates (
    id            TEXT PRIMARY KEY,
    session_id    TEXT NOT NULL,
    run_id        BIGINT NOT NULL,
    tool_call_id  TEXT NOT NULL,
    tool          TEXT NOT NULL,
    arguments     JSONB NOT NULL,
    args_hash     TEXT NOT NULL,
    kind          TEXT NOT NULL,
    question      TEXT NOT NULL DEFAULT '',
    options       JSONB NOT NULL DEFAULT '[]',
    state         TEXT NOT NULL,
    decided_by    TEXT NOT NULL DEFAULT '',
    surface       TEXT NOT NULL DEFAULT '',
    reason        TEXT NOT NULL DEFAULT '',
    answer        TEXT NOT NULL DEFAULT '',
    decided_at    TIMESTAMPTZ,
    expires_at    TIMESTAMPTZ NOT NULL,
    created_at    TIMESTAMPTZ NOT NULL,
    logged        BOOLEAN NOT NULL DEFAULT FALSE
);
CREATE INDEX gates_session ON gates (session_id, created_at);
CREATE INDEX gates_due ON gates (expires_at) WHERE state = 'pending';
CREATE INDEX gates_unlogged ON gates (decided_at) WHERE state <> 'pending' AND NOT logged;

-- +goose Down
DROP TABLE gates;
