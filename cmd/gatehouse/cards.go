package main

import (
	"log/slog"
	"strings"

	"github.com/gatehouse/gatehouse/cards"
)

// cardLimit is toolworker.Config.CardLimit: the room the card of the
// smallest configured chat platform has for the fields that must be
// shown whole (its longest message less the card's frame, which holds
// the link under GATEHOUSE_PUBLIC_URL). 0 without a chat platform: the
// web chat shows any card whole.
func cardLimit(cfg Config, log *slog.Logger) int {
	adapters, err := newAdapters(cfg, log)
	if err != nil {
		return 0 // newGateway reports it and serve stops
	}
	limit, smallest := 0, ""
	for _, a := range adapters {
		maxText := a.Limits().MaxText
		if maxText <= 0 {
			continue
		}
		room := max(maxText-cards.Frame(cfg.PublicURL), 1)
		if limit == 0 || room < limit {
			limit, smallest = room, a.Platform()
		}
	}
	if limit > 0 {
		log.Debug("approval cards: fields that must be shown whole get this many characters", "limit", limit, "platform", smallest,
			"link", strings.TrimSpace(cfg.PublicURL) != "")
	}
	return limit
}
