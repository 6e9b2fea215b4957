package main

import (
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/cmd/gatehouse/internal/config"
	"github.com/gatehouse/gatehouse/gates"
	"github.com/gatehouse/gatehouse/gateway"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/gateway/uploads"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/models"
	"github.com/gatehouse/gatehouse/store"
)

// newGateway builds the chat gateway with an adapter for every platform
// whose token is set; nil when there is none.
func newGateway(cfg Config, st store.Store, k *kernel.Kernel, gateSvc *gates.Service, upl *uploads.Service, choices models.ChatChoices, reg prometheus.Registerer, log *slog.Logger) (*gateway.Gateway, error) {
	adapters, err := newAdapters(cfg, log)
	if err != nil || len(adapters) == 0 {
		return nil, err
	}
	allowed := map[string][]string{}
	allowedSetting := map[string]string{}
	for _, p := range config.Platforms {
		allowed[p.Name] = splitList(cfg.Platform[p.Allowed])
		allowedSetting[p.Name] = p.Allowed
	}
	for _, a := range adapters {
		if len(allowed[a.Platform()]) == 0 && !cfg.Pairing {
			log.Warn("nobody is allowed on this platform yet: every message is dropped as not_allowed (the receive log shows who wrote)",
				"platform", a.Platform(), "set", allowedSetting[a.Platform()])
		}
	}
	warnOpenSelfApproval(cfg, adapters, allowed, allowedSetting, log)
	approvalChat, err := config.ParseApprovalChat(cfg.ApprovalChat)
	if err != nil {
		return nil, fmt.Errorf("GATEHOUSE_APPROVAL_CHAT: %w", err)
	}
	if approvalChat.Platform != "" && !slices.ContainsFunc(adapters, func(a chat.Adapter) bool { return a.Platform() == approvalChat.Platform }) {
		return nil, fmt.Errorf("GATEHOUSE_APPROVAL_CHAT names %s, which is not configured (set its token)", approvalChat.Platform)
	}
	return gateway.New(gateway.Config{Kernel: k, Store: st, Gates: gateSvc, Adapters: adapters, Uploads: upl, Allowed: allowed, Pairing: cfg.Pairing, FloodLimit: cfg.FloodLimit, PublicURL: cfg.PublicURL,
		Approvers: cfg.ApproverRules(), ApprovalChat: approvalChat, ChatModels: choices, Model: cfg.Model, Location: cfg.Location(),
		MidTurn: gh.Delivery(cfg.MidTurn), LeaseTTL: cfg.LeaseTTL, Retention: cfg.Retention, Logger: log, Metrics: reg}), nil
}

// warnOpenSelfApproval warns when a platform lets everyone in ("*") while
// the requester approves their own danger tools' cards: then anyone who
// writes to the bot approves what their own message asked for, and the
// gate checks nothing but that someone pressed.
func warnOpenSelfApproval(cfg Config, adapters []chat.Adapter, allowed map[string][]string, setting map[string]string, log *slog.Logger) {
	rules := cfg.ApproverRules()
	var selfTools []string
	if rules.RequesterApproves("") {
		selfTools = append(selfTools, "every danger tool")
	}
	for tool, off := range cfg.RequesterOff {
		if tool != "" && !off && !rules.RequesterApproves("") {
			selfTools = append(selfTools, strings.ToLower(tool))
		}
	}
	if len(selfTools) == 0 {
		return
	}
	slices.Sort(selfTools)
	for _, a := range adapters {
		if slices.Contains(allowed[a.Platform()], "*") {
			log.Warn("anyone may write to the bot and approve their own cards: set GATEHOUSE_REQUESTER_APPROVES=off with named GATEHOUSE_APPROVERS, or name the users allowed",
				"platform", a.Platform(), "set", setting[a.Platform()]+"=*", "requester approves", strings.Join(selfTools, ", "))
		}
	}
}

func splitList(v string) []string {
	var out []string
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			out = append(out, s)
		}
	}
	return out
}

// newAdapters builds an adapter for each platform whose token is set.
func newAdapters(cfg Config, log *slog.Logger) ([]chat.Adapter, error) {
	var out []chat.Adapter
	for _, p := range config.Platforms {
		a, err := p.New(cfg.Platform, log)
		if errors.Is(err, chat.ErrNotConfigured) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.Name, err)
		}
		out = append(out, a)
	}
	return out, nil
}
