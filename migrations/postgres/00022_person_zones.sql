-- +goose Up
-- Each person's time zone (/tz in the chat, or an admin under People):
-- the base prompt's date of a turn answering them is in it. Keyed by the
-- user key the log names them by, which a turn reads; the platform's id
-- and name are kept for the admin. Not a column of people: most people
-- are let in by an allow-list, which has no row there.
CREATE TABLE person_zones (
    user_key  TEXT PRIMARY KEY,
    platform  TEXT NOT NULL,
    user_id   TEXT NOT NULL,
    user_name TEXT NOT NULL DEFAULT '',
    zone      TEXT NOT NULL,
    set_by    TEXT NOT NULL DEFAULT '',
    set_at    TIMESTAMPTZ NOT NULL
);
CREATE INDEX person_zones_set ON person_zones (set_at);

-- +goose Down
DROP TABLE person_zones;
