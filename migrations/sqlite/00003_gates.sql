-- +goose Up
CREATE TABLE gates (
    id            TEXT PRIMARY KEY,
    session_id    TEXT NOT NULL,
    run_id        INTEGER NOT NULL,
    tool_call_id  TEXT NOT NULL,
    tool          TEXT NOT NULL,
    arguments     TEXT NOT NULL,
    args_hash     TEXT NOT NULL,
    kind          TEXT NOT NULL,
    question      TEXT NOT NULL DEFAULT '',
    options       TEXT NOT NULL DEFAULT '[]',
    state         TEXT NOT NULL,
    decided_by    TEXT NOT NULL DEFAULT '',
    surface       TEXT NOT NULL DEFAULT '',
    reason        TEXT NOT NULL DEFAULT '',
    answer        TEXT NOT NULL DEFAULT '',
    decided_at    INTEGER NOT NULL DEFAULT 0,
    expires_at    INTEGER NOT NULL,
    created_at    INTEGER NOT NULL,
    logged        INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE INDEX gates_session ON gates (session_id, created_at);
CREATE INDEX gates_due ON gates (expires_at) WHERE state = 'pending';
CREATE INDEX gates_unlogged ON gates (decided_at) WHERE state <> 'pending' AND NOT logged;

-- +goose Down
DROP TABLE gates;
