-- +goose Up
-- What the people of a chat chose for it (/model, /think, the web chat's
-- selector). A platform chat is keyed by its platform and chat id, so its
-- every session (each Slack thread, each Telegram topic) shares one row;
-- a web or API session is its own chat (platform '', chat_id the session
-- id). An empty value is no choice: the configured default applies. More
-- per-chat settings are more columns of this row.
CREATE TABLE chat_settings (
	platform TEXT NOT NULL,
	chat_id TEXT NOT NULL,
	selection TEXT NOT NULL DEFAULT '',
	thinking TEXT NOT NULL DEFAULT '',
	updated_by TEXT NOT NULL DEFAULT '',
	updated_at TIMESTAMPTZ NOT NULL,
	PRIMARY KEY (platform, chat_id)
);

-- +goose Down
DROP TABLE chat_settings;
