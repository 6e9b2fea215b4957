-- +goose Up
-- Which replica has a live stream (SSE) on which session: a commit NOTIFYs
-- its events to the other replicas only for sessions one of them follows,
-- so a stream on another replica sends them without reading the store.
-- Rows expire unless their replica refreshes them (it died).
CREATE TABLE stream_followers (
    session_id TEXT NOT NULL,
    replica    TEXT NOT NULL,
    expires_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (session_id, replica)
);

-- +goose Down
DROP TABLE stream_followers;
