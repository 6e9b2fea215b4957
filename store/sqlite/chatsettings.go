package sqlite

import (
	"context"
	"database/sql"
	"errors"

	"github.com/gatehouse/gatehouse/store"
)

// Chat settings (see store/chatsettings.go).

const chatSettingsCols = `platform, chat_id, selection, thinking, updated_by, updated_at`

func scanChatSettings(row rowScanner) (store.ChatSettings, bool, error) {
	var s store.ChatSettings
	var updated int64
	err := row.Scan(&s.Platform, &s.ChatID, &s.Selection, &s.Thinking, &s.UpdatedBy, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return store.ChatSettings{}, false, nil
	}
	s.Updated = fromMicros(updated)
	return s, err == nil, dbErr(err, "read chat settings")
}

func (t *reader) ChatSettings(ctx context.Context, chat store.ChatKey) (store.ChatSettings, bool, error) {
	return scanChatSettings(t.q.QueryRowContext(ctx, `SELECT `+chatSettingsCols+` FROM chat_settings WHERE platform = ? AND chat_id = ?`, chat.Platform, chat.ChatID))
}

// SessionChatSettings finds the session's chat in the address book in
// the same statement: a session with no address is its own chat.
func (t *reader) SessionChatSettings(ctx context.Context, sessionID string) (store.ChatSettings, bool, error) {
	return scanChatSettings(t.q.QueryRowContext(ctx, `SELECT `+chatSettingsCols+` FROM chat_settings
		WHERE platform = COALESCE((SELECT platform FROM chat_addresses WHERE session_id = ?1), '')
		AND chat_id = COALESCE((SELECT chat_id FROM chat_addresses WHERE session_id = ?1), ?1)`, sessionID))
}

func (t *writer) PutChatSettings(ctx context.Context, c store.ChatSettingsChange) (store.ChatSettings, error) {
	s, _, err := scanChatSettings(t.q.QueryRowContext(ctx, `INSERT INTO chat_settings (`+chatSettingsCols+`) VALUES (?1, ?2, ?3, ?5, ?7, ?8)
		ON CONFLICT (platform, chat_id) DO UPDATE SET
			selection = CASE WHEN ?4 THEN excluded.selection ELSE chat_settings.selection END,
			thinking = CASE WHEN ?6 THEN excluded.thinking ELSE chat_settings.thinking END,
			updated_by = excluded.updated_by, updated_at = excluded.updated_at
		RETURNING `+chatSettingsCols,
		c.Platform, c.ChatID, deref(c.Selection), c.Selection != nil, deref(c.Thinking), c.Thinking != nil, c.By, micros(c.Now)))
	return s, err
}

// deref is *p, "" for nil.
func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
