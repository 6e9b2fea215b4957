package supervisor

import (
	"context"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/store"
)

// ChatSettingsReader reads what a session's chat chose (store.Store is
// one): its model and thinking level, kept per chat by /model, /think
// and the web chat's selector.
type ChatSettingsReader interface {
	SessionChatSettings(ctx context.Context, sessionID string) (store.ChatSettings, bool, error)
}

// chatSettings are the session's chat's choices as a turn may use them:
// a selection the chat may no longer pick (GATEHOUSE_CHAT_MODELS changed
// since) is dropped, so the configured model answers rather than one the
// operator took off the list. A level no input could choose is dropped
// too. None are read when no reader is configured.
func (s *Supervisor) chatSettings(ctx context.Context, sessionID string) (store.ChatSettings, error) {
	if s.cfg.ChatSettings == nil {
		return store.ChatSettings{}, nil
	}
	cs, found, err := s.cfg.ChatSettings.SessionChatSettings(ctx, sessionID)
	if err != nil || !found {
		return store.ChatSettings{}, err
	}
	if cs.Selection != "" && !s.cfg.ChatModels.Allows(cs.Selection) {
		s.log.Warn("the chat's model is no longer one a chat may pick (GATEHOUSE_CHAT_MODELS); the configured model answers",
			"session", sessionID, "selection", cs.Selection)
		cs.Selection = ""
	}
	if gh.CheckThinking(cs.Thinking) != nil {
		cs.Thinking = ""
	}
	return cs, nil
}

// thinking is the level the turn's next request asks for: its inputs'
// (the newest that chose one), else the chat's.
func (p *attemptPlan) thinking() string {
	if level := p.t.Thinking(p.inputs); level != "" {
		return level
	}
	return p.chat.Thinking
}
