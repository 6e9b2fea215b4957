-- +goose Up
-- Pairing: one-time codes given to strangers who wrote, and the people an
-- admin let in (allowed besides the environment's allow-lists).
CREATE TABLE pairing_codes (
    code        TEXT PRIMARY KEY,
    platform    TEXT NOT NULL,
    user_id     TEXT NOT NULL,
    user_name   TEXT NOT NULL DEFAULT '',
    chat_id     TEXT NOT NULL DEFAULT '',
    text        TEXT NOT NULL DEFAULT '',
    state       TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    expires_at  INTEGER NOT NULL,
    closed_at   INTEGER NOT NULL DEFAULT 0
) WITHOUT ROWID;
-- At most one pending code per sender.
CREATE UNIQUE INDEX pairing_codes_pending ON pairing_codes (platform, user_id) WHERE state = 'pending';
CREATE INDEX pairing_codes_user ON pairing_codes (platform, user_id, created_at);
CREATE INDEX pairing_codes_created ON pairing_codes (created_at);

CREATE TABLE people (
    platform    TEXT NOT NULL,
    user_id     TEXT NOT NULL,
    user_name   TEXT NOT NULL DEFAULT '',
    code        TEXT NOT NULL DEFAULT '',
    approved_by TEXT NOT NULL DEFAULT '',
    approved_at INTEGER NOT NULL,
    PRIMARY KEY (platform, user_id)
) WITHOUT ROWID;

-- +goose Down
DROP TABLE people;
DROP TABLE pairing_codes;
