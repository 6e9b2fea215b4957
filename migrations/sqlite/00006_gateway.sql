-- +goose Up
CREATE TABLE receive_log (
    id          INTEGER PRIMARY KEY AUTOINCREMENT,
    platform    TEXT NOT NULL,
    update_id   TEXT NOT NULL,
    chat_id     TEXT NOT NULL DEFAULT '',
    thread_id   TEXT NOT NULL DEFAULT '',
    user_id     TEXT NOT NULL DEFAULT '',
    user_name   TEXT NOT NULL DEFAULT '',
    message_id  TEXT NOT NULL DEFAULT '',
    is_bot      INTEGER NOT NULL DEFAULT 0,
    text        TEXT NOT NULL DEFAULT '',
    outcome     TEXT NOT NULL,
    reason      TEXT NOT NULL DEFAULT '',
    detail      TEXT NOT NULL DEFAULT '',
    session_id  TEXT NOT NULL DEFAULT '',
    seq         INTEGER NOT NULL DEFAULT 0,
    received_at INTEGER NOT NULL
);
-- One first row per update; redeliveries are logged as duplicates beside it.
CREATE UNIQUE INDEX receive_log_update ON receive_log (platform, update_id) WHERE reason <> 'duplicate';
CREATE INDEX receive_log_flood ON receive_log (platform, chat_id, received_at) WHERE outcome = 'handed_on';

CREATE TABLE chat_addresses (
    session_id  TEXT PRIMARY KEY,
    platform    TEXT NOT NULL,
    chat_id     TEXT NOT NULL,
    thread_id   TEXT NOT NULL DEFAULT '',
    chat_type   TEXT NOT NULL DEFAULT '',
    reply_to    TEXT NOT NULL DEFAULT '',
    user_id     TEXT NOT NULL DEFAULT '',
    cursor      INTEGER NOT NULL DEFAULT 0,
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL
) WITHOUT ROWID;
CREATE UNIQUE INDEX chat_addresses_chat ON chat_addresses (platform, chat_id, thread_id);

CREATE TABLE outbox (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    session_id   TEXT NOT NULL,
    seq          INTEGER NOT NULL,
    platform     TEXT NOT NULL,
    kind         TEXT NOT NULL,
    payload      TEXT NOT NULL,
    state        TEXT NOT NULL,
    attempts     INTEGER NOT NULL DEFAULT 0,
    parts_sent   INTEGER NOT NULL DEFAULT 0,
    message_ids  TEXT NOT NULL DEFAULT '[]',
    last_error   TEXT NOT NULL DEFAULT '',
    owner        TEXT NOT NULL DEFAULT '',
    lease_until  INTEGER NOT NULL DEFAULT 0,
    available_at INTEGER NOT NULL,
    created_at   INTEGER NOT NULL,
    updated_at   INTEGER NOT NULL,
    UNIQUE (session_id, seq)
);
CREATE INDEX outbox_open ON outbox (platform, session_id, seq) WHERE state IN ('pending', 'sending');
CREATE INDEX outbox_platform ON outbox (platform, id);

CREATE TABLE gate_cards (
    gate_id     TEXT NOT NULL,
    session_id  TEXT NOT NULL,
    platform    TEXT NOT NULL,
    chat_id     TEXT NOT NULL,
    thread_id   TEXT NOT NULL DEFAULT '',
    message_id  TEXT NOT NULL,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (gate_id, platform, chat_id, message_id)
) WITHOUT ROWID;

CREATE TABLE platform_leases (
    name        TEXT PRIMARY KEY,
    owner       TEXT NOT NULL,
    expires_at  INTEGER NOT NULL
) WITHOUT ROWID;

-- +goose Down
DROP TABLE platform_leases;
DROP TABLE gate_cards;
DROP TABLE outbox;
DROP TABLE chat_addresses;
DROP TABLE receive_log;
