-- +goose Up
-- Grants: "approve for this chat". A later call of the tool in the session
-- with the same bound runs without a card until expires_at, unless revoked.
CREATE TABLE grants (
    id          TEXT PRIMARY KEY,
    session_id  TEXT NOT NULL,
    gate_id     TEXT NOT NULL DEFAULT '',
    tool        TEXT NOT NULL,
    bound       TEXT NOT NULL,
    label       TEXT NOT NULL DEFAULT '',
    granted_by  TEXT NOT NULL DEFAULT '',
    surface     TEXT NOT NULL DEFAULT '',
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL,
    revoked_by  TEXT NOT NULL DEFAULT '',
    revoked_at  INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
CREATE INDEX grants_lookup ON grants (session_id, tool, bound, expires_at);
CREATE INDEX grants_created ON grants (created_at);

-- +goose Down
DROP TABLE grants;
