package main

import (
	"log/slog"

	"github.com/gatehouse/gatehouse/httpapi"
	"github.com/gatehouse/gatehouse/httpapi/knowledgeapi"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/knowledge"
	"github.com/gatehouse/gatehouse/store"
)

// knowledgeWiring is the knowledge library and what serves it: the
// folder watcher (nil without GATEHOUSE_KNOWLEDGE_DIR) and the API's
// endpoints (httpapi/knowledgeapi) for /v1 and the admin page.
type knowledgeWiring struct {
	lib     *knowledge.Library
	watcher *knowledge.Watcher
	api     *knowledgeapi.Handler
}

// newKnowledge builds the library over st from the settings; embeddings
// reuse memory's GATEHOUSE_EMBEDDINGS_*. The watcher, when a folder is
// set, names this replica on its lease as the gateway's platform leases
// do (kernel.NewOwner).
func newKnowledge(cfg Config, st store.Store, log *slog.Logger) (knowledgeWiring, error) {
	lib, err := knowledge.New(st, knowledge.Config{
		LexicalFloor: cfg.KnowledgeLexicalFloor, EmbeddingsFloor: cfg.KnowledgeEmbeddingsFloor,
		MaxPassages: cfg.KnowledgeMaxPassages, TokenBudget: cfg.KnowledgeTokenBudget, MaxDocumentBytes: int64(cfg.KnowledgeMaxDocumentBytes),
		PassageBytes: cfg.KnowledgePassageBytes, OverlapBytes: cfg.KnowledgeOverlapBytes,
		EmbeddingsURL: cfg.EmbeddingsURL, EmbeddingsModel: cfg.EmbeddingsModel, EmbeddingsAPIKey: cfg.EmbeddingsAPIKey, Logger: log,
	})
	if err != nil {
		return knowledgeWiring{}, err
	}
	w := knowledgeWiring{lib: lib}
	api := knowledgeapi.Config{Library: lib, WriteError: httpapi.ErrorWriter(log), MaxBodyBytes: int64(cfg.MaxBodyBytes), ReadTimeout: cfg.HTTPReadTimeout}
	if cfg.KnowledgeDir != "" {
		w.watcher, err = knowledge.NewWatcher(lib, st, knowledge.WatcherConfig{Dir: cfg.KnowledgeDir, Owner: kernel.NewOwner(), Interval: cfg.KnowledgeScanInterval})
		if err != nil {
			return knowledgeWiring{}, err
		}
		api.Failures = w.watcher.Failures
	}
	w.api = knowledgeapi.New(api)
	return w, nil
}

// add puts the watcher in the run group, when there is one.
func (w knowledgeWiring) add(group *runGroup) {
	if w.watcher != nil {
		group.add("knowledge folder", w.watcher)
	}
}
