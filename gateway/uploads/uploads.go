package uploads

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"time"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/cards"
	"github.com/gatehouse/gatehouse/gates"
	"github.com/gatehouse/gatehouse/gateway/chat"
	"github.com/gatehouse/gatehouse/internal/sweeper"
	"github.com/gatehouse/gatehouse/kernel"
	"github.com/gatehouse/gatehouse/knowledge"
	"github.com/gatehouse/gatehouse/store"
)

// Tool is the name a library card is decided under: approver rules for
// it (GATEHOUSE_APPROVERS_LIBRARY_ADD, or the rule for every tool) say
// who may add to the shared collection from a chat.
const Tool = "library_add"

// Notice codes of what an upload tells the chat.
const (
	NoticeAdded    = "library_added"
	NoticeNotAdded = "library_not_added"
)

// Config configures a Service.
type Config struct {
	// Kernel commits the cards and notices. Required.
	Kernel *kernel.Kernel
	// Store holds the gate rows: the kernel's store. Required.
	Store store.Store
	// Library is where files go. nil: /library answers that the library
	// is not enabled.
	Library *knowledge.Library
	// Fetcher returns the adapter that fetches a platform's files; false
	// when there is none. Bound late: the adapters are built after the
	// gates service this package logs decisions for.
	Fetcher func(platform string) (chat.FileFetcher, bool)
	// Gates opens and decides the cards (the gate's one home); the
	// service registers itself with it for gh.GateKindLibrary. Required.
	Gates *gates.Service
	// CardTTL is how long a shared-collection card waits for an
	// approver. Defaults to 24h.
	CardTTL time.Duration
	// FetchTimeout bounds the download of one file. Defaults to 1m.
	FetchTimeout time.Duration
	// MaxFiles is how many files one command adds; more are named as not
	// added. Defaults to 5.
	MaxFiles int
	// Sweep is how often approved cards whose file was never added (the
	// replica that logged the approval stopped before adding it) are
	// looked for and added. Defaults to 1m.
	Sweep time.Duration
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Now defaults to time.Now.
	Now func() time.Time
}

func (c Config) withDefaults() Config {
	if c.CardTTL <= 0 {
		c.CardTTL = 24 * time.Hour
	}
	if c.FetchTimeout <= 0 {
		c.FetchTimeout = time.Minute
	}
	if c.MaxFiles <= 0 {
		c.MaxFiles = 5
	}
	if c.Sweep <= 0 {
		c.Sweep = time.Minute
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// Service answers /library and logs the decisions of library cards.
type Service struct {
	cfg Config
	// wg counts the adds approvals started (Decided).
	wg      sync.WaitGroup
	sweeper sweeper.Sweeper
}

// New returns a Service.
func New(cfg Config) *Service {
	if cfg.Kernel == nil || cfg.Store == nil || cfg.Gates == nil {
		panic("uploads: New needs a Kernel, a Store and Gates")
	}
	s := &Service{cfg: cfg.withDefaults()}
	cfg.Gates.Register(gh.GateKindLibrary, s)
	return s
}

// Request is one /library command.
type Request struct {
	// In is the command's update: its sender, chat and files.
	In gh.Inbound
	// SessionID is the chat's session; its address must exist (the
	// gateway records it first), so notices and cards reach the chat.
	SessionID string
	// UserKey names the sender (people.UserKey).
	UserKey string
	// Args is what followed the command: "" or "chat", or "shared".
	Args string
}

// Usage is what /library says when it has nothing to add.
const Usage = "To add a file to this chat's library, send it with /library as its caption (or reply /library to the message that has it; on Slack write !library). " +
	"Add \"shared\" (/library shared) to ask an approver to add it to the shared library every chat reads. Markdown, text, HTML and PDF are read."

// Hint is what a person who sent files with no words is told (in a
// direct chat): how to add them, since nothing is added unasked.
func Hint(platform string, files []gh.File) string {
	names := make([]string, 0, len(files))
	for _, f := range files {
		names = append(names, name(f))
	}
	how := "reply /library to it (or send it again with /library as its caption)"
	if platform == gh.PlatformSlack {
		how = "send it again with the message !library"
	}
	return "📎 I don't read files on their own. To add " + strings.Join(names, ", ") + " to this chat's library, " + how +
		"; /library shared asks an approver to add it for everyone."
}

// Command answers /library: the text the sender is shown, and the detail
// the receive log keeps. An error means a retry can help (the store is
// unavailable); what is wrong with a file is said in the text.
func (s *Service) Command(ctx context.Context, r Request) (text, detail string, err error) {
	if s.cfg.Library == nil {
		return "The knowledge library is not enabled on this gateway.", "/library: no library", nil
	}
	var shared bool
	switch strings.ToLower(strings.TrimSpace(r.Args)) {
	case "", "chat", "here":
	case "shared", "everyone", "all":
		shared = true
	default:
		return Usage, "/library: usage", nil
	}
	files := r.In.Files
	if len(files) == 0 {
		return Usage, "/library: no file", nil
	}
	var skipped []string
	if len(files) > s.cfg.MaxFiles {
		for _, f := range files[s.cfg.MaxFiles:] {
			skipped = append(skipped, name(f))
		}
		files = files[:s.cfg.MaxFiles]
	}
	fetcher, ok := s.fetcher(r.In.Platform)
	if !ok {
		return "Files sent on " + r.In.Platform + " cannot be added to the library.", "/library: no fetcher", nil
	}
	var lines, details []string
	for _, f := range files {
		var line string
		if shared {
			line, err = s.askShared(ctx, fetcher, r, f)
		} else {
			line, err = s.addToChat(ctx, fetcher, r, f)
		}
		if err != nil {
			return "", "", err
		}
		lines = append(lines, line)
		details = append(details, name(f))
	}
	if len(skipped) > 0 {
		lines = append(lines, fmt.Sprintf("Not added: %s (at most %d files at a time).", strings.Join(skipped, ", "), s.cfg.MaxFiles))
	}
	where := "chat"
	if shared {
		where = "shared"
	}
	return strings.Join(lines, "\n"), "/library " + where + ": " + strings.Join(details, ", "), nil
}

// addToChat adds one file to the chat's collection and says how it went.
func (s *Service) addToChat(ctx context.Context, fetcher chat.FileFetcher, r Request, f gh.File) (string, error) {
	data, refusal := s.fetch(ctx, fetcher, f)
	if refusal != "" {
		return "❌ Not added: " + refusal + ".", nil
	}
	doc, changed, err := s.cfg.Library.Add(ctx, knowledge.AddRequest{Collection: knowledge.ChatCollection(r.SessionID), Name: name(f),
		MediaType: f.MediaType, Source: "chat", AddedBy: r.UserKey, Data: data})
	if err != nil {
		return refused(f, err)
	}
	if !changed {
		return fmt.Sprintf("📚 %s is already in this chat's library, unchanged.", name(f)), nil
	}
	s.cfg.Logger.Info("uploads: added a chat's file to its library", "session", r.SessionID, "document", doc.Name, "passages", doc.Passages)
	return fmt.Sprintf("📚 Added %q (%s) to this chat's library: %s. Ask me about it.", doc.Title, doc.Name, passages(doc.Passages)), nil
}

// fetch downloads f within the library's bound; refusal says why not,
// as a clause.
func (s *Service) fetch(ctx context.Context, fetcher chat.FileFetcher, f gh.File) ([]byte, string) {
	max := s.cfg.Library.Config().MaxDocumentBytes
	if f.Size > max {
		return nil, fmt.Sprintf("%s is %s, over the library's bound of %s", name(f), size(f.Size), size(max))
	}
	fctx, cancel := context.WithTimeout(ctx, s.cfg.FetchTimeout)
	defer cancel()
	data, err := fetcher.FetchFile(fctx, f, max)
	switch {
	case err == nil:
		return data, ""
	case gh.IsCode(err, gh.CodePayloadTooLarge):
		return nil, fmt.Sprintf("%s is over the library's bound of %s", name(f), size(max))
	default:
		s.cfg.Logger.Warn("uploads: a file could not be fetched", "file", name(f), "err", err)
		return nil, fmt.Sprintf("%s could not be fetched from the chat (%s); please send it again", name(f), gh.ErrorMessage(err))
	}
}

// refused says why the library would not take f; an error the store
// raised (not the file's fault) is returned for a retry.
func refused(f gh.File, err error) (string, error) {
	switch gh.ErrorCode(err) {
	case gh.CodeInvalid, gh.CodePayloadTooLarge:
		return "❌ Not added: " + gh.ErrorMessage(err) + ".", nil
	}
	return "", err
}

// askShared checks f and opens a card asking an approver to add it to
// the shared collection.
func (s *Service) askShared(ctx context.Context, fetcher chat.FileFetcher, r Request, f gh.File) (string, error) {
	data, refusal := s.fetch(ctx, fetcher, f)
	if refusal != "" {
		return "❌ Not added: " + refusal + ".", nil
	}
	checked, err := s.cfg.Library.Check(name(f), f.MediaType, data)
	if err != nil {
		return refused(f, err)
	}
	c := card{Collection: knowledge.Shared, Name: name(f), MediaType: checked.MediaType, Size: int64(len(data)), SHA256: checked.Hash,
		Passages: checked.Passages, Platform: r.In.Platform, Ref: f.Ref, By: r.UserKey, ByName: firstNonEmpty(r.In.UserName, r.In.UserID),
		First: cards.Clip(checked.First, MaxFirstPassage)}
	if c.Replaces, err = s.replaces(ctx, c.Name, c.SHA256); err != nil {
		return "", err
	}
	c.ReplacesOperator = c.Replaces != nil && c.Replaces.Operator
	id := gateID(r.SessionID, r.In.UpdateID, f.Ref)
	var g gh.Gate
	var cs []kernel.Committed
	err = s.cfg.Store.InTx(ctx, func(ctx context.Context, tx store.Tx) error {
		var err error
		g, cs, err = s.openTx(ctx, tx, r.SessionID, id, c)
		return err
	})
	if err != nil {
		return "", err
	}
	s.cfg.Gates.Opened(ctx, g, cs)
	return fmt.Sprintf("📨 Asked an approver to add %s to the shared library (%s). You will hear here when it is decided.", c.Name, passages(c.Passages)), nil
}

// card is a library card's arguments: the file as checked, where it came
// from, who asked.
type card struct {
	Collection string `json:"collection"`
	Name       string `json:"name"`
	MediaType  string `json:"mediaType"`
	Size       int64  `json:"size"`
	SHA256     string `json:"sha256"`
	Passages   int    `json:"passages"`
	Platform   string `json:"platform"`
	Ref        string `json:"ref"`
	By         string `json:"by"`
	ByName     string `json:"byName,omitempty"`
	// First is the first passage of the file's text, cut to
	// MaxFirstPassage, as the card shows it (replace.go).
	First string `json:"first,omitempty"`
	// Replaces is the shared document of the same name the file would
	// replace; ReplacesOperator (gh.LibraryReplacesOperatorKey) says it
	// is the operator's, so only the operator may decide the card.
	Replaces         *replaced `json:"replaces,omitempty"`
	ReplacesOperator bool      `json:"replacesOperator,omitempty"`
}

// openTx opens the card in tx through the gates service: gate.opened from
// outside any run, and the gate's row. A repeat (the command delivered
// again) opens nothing.
func (s *Service) openTx(ctx context.Context, tx store.Tx, sessionID, id string, c card) (gh.Gate, []kernel.Committed, error) {
	now := s.cfg.Now().UTC().Truncate(time.Microsecond)
	args, err := json.Marshal(c)
	if err != nil {
		return gh.Gate{}, nil, gh.Wrap(gh.CodeInternal, err, "encode a library card")
	}
	g := gh.Gate{ID: id, SessionID: sessionID, ToolCallID: "library:" + id, Tool: Tool, Arguments: args, Kind: gh.GateKindLibrary,
		State: gh.GatePending, ExpiresAt: now.Add(s.cfg.CardTTL), Created: now}
	// No requesters: the one who asked does not approve their own file
	// for everyone; an approver does.
	cs, err := s.cfg.Gates.OpenOutsideTx(ctx, tx, gates.Opening{Gate: g, Card: gh.GateOpened{Fields: cardFields(c)}, Key: "library-opened:" + id})
	return g, cs, err
}

// gateID is the card's id: the same command and file open the same card.
func gateID(sessionID, updateID, ref string) string {
	h := sha256.Sum256([]byte("library\x00" + sessionID + "\x00" + updateID + "\x00" + ref))
	return "g_" + hex.EncodeToString(h[:10])
}

func (s *Service) fetcher(platform string) (chat.FileFetcher, bool) {
	if s.cfg.Fetcher == nil {
		return nil, false
	}
	return s.cfg.Fetcher(platform)
}

// name is how a file is named: its name, else "the file".
func name(f gh.File) string {
	if n := strings.TrimSpace(f.Name); n != "" {
		return n
	}
	return "file"
}

func passages(n int) string {
	if n == 1 {
		return "1 passage"
	}
	return strconv.Itoa(n) + " passages"
}

// size says a byte count the way people read it.
func size(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return strconv.FormatInt(n, 10) + " bytes"
}

func firstNonEmpty(s ...string) string {
	for _, v := range s {
		if strings.TrimSpace(v) != "" {
			return v
		}
	}
	return ""
}
