package knowledge_test

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"testing"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/knowledge"
	"github.com/gatehouse/gatehouse/store"
)

const handbook = `# Employee handbook

## Vacation

Every employee receives 25 vacation days per year. Unused vacation days carry over until March.

## Equipment

New staff receive a laptop on their first morning. Return the laptop when leaving the company.

## Expenses

Submit receipts within thirty days through the finance portal.
`

func newLibrary(t *testing.T, st store.Store, cfg knowledge.Config) *knowledge.Library {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	lib, err := knowledge.New(st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return lib
}

func add(t *testing.T, lib *knowledge.Library, collection, name, text string) knowledge.Document {
	t.Helper()
	doc, _, err := lib.Add(context.Background(), knowledge.AddRequest{Collection: collection, Name: name, Source: "api", Data: []byte(text)})
	if err != nil {
		t.Fatalf("add %s: %v", name, err)
	}
	return doc
}

func recall(t *testing.T, lib *knowledge.Library, scope knowledge.Scope, q string) knowledge.Found {
	t.Helper()
	f, err := lib.Recall(context.Background(), knowledge.Query{Text: q, Scope: scope})
	if err != nil {
		t.Fatalf("recall %q: %v", q, err)
	}
	return f
}

func TestAddReplaceDelete(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store, _ func(*testing.T) store.Store) {
		ctx := context.Background()
		lib := newLibrary(t, st, knowledge.Config{})
		doc, changed, err := lib.Add(ctx, knowledge.AddRequest{Collection: knowledge.Shared, Name: "handbook.md", Source: "api", AddedBy: "operator", Data: []byte(handbook)})
		if err != nil || !changed || doc.Version != 1 || doc.Passages != 3 || doc.Title != "Employee handbook" || doc.MediaType != knowledge.TypeMarkdown || doc.Size != int64(len(handbook)) {
			t.Fatalf("add: %+v %v %v", doc, changed, err)
		}
		again, changed, err := lib.Add(ctx, knowledge.AddRequest{Collection: knowledge.Shared, Name: "handbook.md", Data: []byte(handbook)})
		if err != nil || changed || again.ID != doc.ID || again.Version != 1 {
			t.Fatalf("the same bytes again: %+v %v %v", again, changed, err)
		}
		ps, err := lib.Passages(ctx, doc.ID)
		if err != nil || len(ps) != 3 {
			t.Fatalf("passages: %+v %v", ps, err)
		}
		for _, p := range ps {
			if handbook[p.Start:p.End] != p.Text {
				t.Fatalf("passage %d's offsets do not point at its text: %q", p.Ord, p.Text)
			}
		}
		changedText := strings.Replace(handbook, "finance portal", "expense tracker Zebrafin", 1)
		v2, changed, err := lib.Add(ctx, knowledge.AddRequest{Collection: knowledge.Shared, Name: "handbook.md", Data: []byte(changedText)})
		if err != nil || !changed || v2.ID != doc.ID || v2.Version != 2 {
			t.Fatalf("changed file: %+v %v %v", v2, changed, err)
		}
		if f := recall(t, lib, knowledge.Scope{}, "Which finance portal takes receipts?"); len(f.Passages) != 0 && strings.Contains(f.Passages[0].Passage.Text, "finance portal") {
			t.Fatalf("the replaced text is still recalled: %+v", f.Passages)
		}
		if f := recall(t, lib, knowledge.Scope{}, "Where is Zebrafin?"); len(f.Passages) != 1 || f.Passages[0].Document.Version != 2 {
			t.Fatalf("the new text is not recalled: %+v", f)
		}
		if ok, err := lib.Delete(ctx, knowledge.Shared, "handbook.md"); err != nil || !ok {
			t.Fatalf("delete: %v %v", ok, err)
		}
		if f := recall(t, lib, knowledge.Scope{}, "Where is Zebrafin?"); len(f.Passages) != 0 || len(f.Considered) != 0 {
			t.Fatalf("a deleted document is recalled: %+v", f)
		}
		if _, _, err := lib.Add(ctx, knowledge.AddRequest{Collection: "chat:", Name: "x.md", Data: []byte("x")}); !gh.IsCode(err, gh.CodeInvalid) {
			t.Fatalf("a collection without a chat: %v", err)
		}
	})
}

func TestBadInputStoresNothing(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store, _ func(*testing.T) store.Store) {
		ctx := context.Background()
		lib := newLibrary(t, st, knowledge.Config{MaxDocumentBytes: 1 << 10})
		png := append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), make([]byte, 64)...)
		if _, _, err := lib.Add(ctx, knowledge.AddRequest{Collection: knowledge.Shared, Name: "notes.txt", Data: png}); !errors.Is(err, knowledge.ErrBinary) || !gh.IsCode(err, gh.CodeInvalid) {
			t.Fatalf("binary under a text name: %v", err)
		}
		big := strings.Repeat("word ", 300)
		if _, _, err := lib.Add(ctx, knowledge.AddRequest{Collection: knowledge.Shared, Name: "big.md", Data: []byte(big)}); !errors.Is(err, knowledge.ErrTooLarge) || !gh.IsCode(err, gh.CodePayloadTooLarge) {
			t.Fatalf("too large: %v", err)
		}
		if docs, err := lib.Documents(ctx, ""); err != nil || len(docs) != 0 {
			t.Fatalf("refused files were stored: %+v %v", docs, err)
		}
	})
}

func TestRecallFloor(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store, _ func(*testing.T) store.Store) {
		lib := newLibrary(t, st, knowledge.Config{})
		add(t, lib, knowledge.Shared, "handbook.md", handbook)
		add(t, lib, knowledge.Shared, "runbook.md", "# Deploys\n\nDeploys run from the main branch every Tuesday.\n\n# Rollback\n\nRestore the last backup and page the on-call engineer.\n")
		f := recall(t, lib, knowledge.Scope{SessionID: "s1", UserKey: "web:ana"}, "How many vacation days do I get per year?")
		if len(f.Passages) == 0 {
			t.Fatalf("nothing recalled; considered %+v", f.Considered)
		}
		top := f.Passages[0]
		if !slices.Equal(top.Passage.Heading, []string{"Employee handbook", "Vacation"}) || top.Document.Name != "handbook.md" ||
			top.Passage.Collection != knowledge.Shared || handbook[top.Passage.Start:top.Passage.End] != top.Passage.Text {
			t.Fatalf("top passage: %+v", top)
		}
		e := top.Evidence.Lexical
		if e == nil || e.Evidence < 1 || e.Coverage < 0.6 || e.Rank != 1 || top.Evidence.Embeddings != nil || top.Evidence.Fused == 0 {
			t.Fatalf("evidence: %+v", top.Evidence)
		}
		for _, r := range f.Passages {
			if r.Evidence.Lexical.Evidence < lib.Config().LexicalFloor {
				t.Fatalf("a passage under the floor was recalled: %+v", r)
			}
		}
		for _, q := range []string{"What is the capital of Peru?", "Who won the football match yesterday?", "hello, thanks!"} {
			if f := recall(t, lib, knowledge.Scope{SessionID: "s1"}, q); len(f.Passages) != 0 {
				t.Errorf("unrelated question %q recalled %+v", q, f.Passages)
			}
		}
		// A question sharing one common word only: scored, under the floor.
		f = recall(t, lib, knowledge.Scope{}, "Is the main road closed for the parade today?")
		if len(f.Passages) != 0 {
			t.Fatalf("a weak match was recalled: %+v", f.Passages)
		}
	})
}

func TestRecallScope(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store, _ func(*testing.T) store.Store) {
		lib := newLibrary(t, st, knowledge.Config{})
		add(t, lib, knowledge.ChatCollection("chat-a"), "falcon.md", "# Falcon\n\nProject Falcon ships its beta on the 14th of June.\n")
		add(t, lib, knowledge.ChatCollection("chat-b"), "falcon.md", "# Falcon budget\n\nProject Falcon budget is two million, kept secret.\n")
		add(t, lib, knowledge.UserCollection("web:bo"), "notes.md", "Falcon budget review with finance on Friday.\n")
		for _, tc := range []struct {
			scope knowledge.Scope
			want  []string
		}{
			{knowledge.Scope{SessionID: "chat-a"}, []string{"chat:chat-a"}},
			{knowledge.Scope{SessionID: "chat-b"}, []string{"chat:chat-b"}},
			{knowledge.Scope{SessionID: "chat-a", UserKey: "web:bo"}, []string{"chat:chat-a", "user:web:bo"}},
			{knowledge.Scope{}, nil},
		} {
			f := recall(t, lib, tc.scope, "What is the Project Falcon budget?")
			var got []string
			for _, r := range f.Considered {
				got = append(got, r.Passage.Collection)
			}
			slices.Sort(got)
			if !slices.Equal(slices.Compact(got), tc.want) {
				t.Errorf("scope %+v read collections %q, want %q", tc.scope, got, tc.want)
			}
		}
	})
}

func TestFusionWithEmbeddings(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store, _ func(*testing.T) store.Store) {
		emb := newFakeEmbeddings(t)
		lib := newLibrary(t, st, knowledge.Config{EmbeddingsURL: emb.srv.URL + "/v1", EmbeddingsModel: "fake"})
		add(t, lib, knowledge.Shared, "handbook.md", handbook)
		if emb.inputs.Load() < 3 {
			t.Fatalf("the passages were not embedded at add: %d inputs", emb.inputs.Load())
		}
		// No word in common with the Vacation passage: only embeddings find it.
		const holiday = "When can I go on holiday?"
		f := recall(t, lib, knowledge.Scope{}, holiday)
		if len(f.Passages) == 0 || f.Passages[0].Passage.Heading[1] != "Vacation" || f.Passages[0].Evidence.Embeddings == nil ||
			f.Passages[0].Evidence.Lexical != nil || f.Passages[0].Evidence.Embeddings.Rank != 1 {
			t.Fatalf("holiday with embeddings: %+v", f)
		}
		// Both retrievers find this one: its fused score sums both ranks.
		f = recall(t, lib, knowledge.Scope{}, "How many vacation days per year?")
		top := f.Passages[0]
		if top.Passage.Heading[1] != "Vacation" || top.Evidence.Lexical == nil || top.Evidence.Embeddings == nil ||
			top.Evidence.Fused != 2.0/61 {
			t.Fatalf("fused: %+v", top.Evidence)
		}
		if f := recall(t, lib, knowledge.Scope{}, "What is the capital of Peru?"); len(f.Passages) != 0 {
			t.Fatalf("an unrelated question recalled %+v", f.Passages)
		}
		// Without embeddings the same question recalls nothing.
		plain := newLibrary(t, st, knowledge.Config{})
		if f := recall(t, plain, knowledge.Scope{}, holiday); len(f.Passages) != 0 {
			t.Fatalf("holiday without embeddings: %+v", f.Passages)
		}
		// A failing endpoint: lexical recall still answers, and says why.
		emb.fail.Store(true)
		failing := newLibrary(t, st, knowledge.Config{EmbeddingsURL: emb.srv.URL + "/v1", EmbeddingsModel: "fake"})
		f = recall(t, failing, knowledge.Scope{}, "How many vacation days per year?")
		if f.EmbeddingsError == "" || len(f.Passages) == 0 || f.Passages[0].Evidence.Embeddings != nil {
			t.Fatalf("with the endpoint failing: %+v", f)
		}
		// A document added while the endpoint fails is embedded when first recalled.
		add(t, failing, knowledge.Shared, "it.md", "# IT\n\nBroken computer? Ask the help desk for a spare notebook.\n")
		emb.fail.Store(false)
		f = recall(t, lib, knowledge.Scope{}, "My laptop died, what now?")
		if len(f.Passages) == 0 || f.Passages[0].Document.Name != "it.md" && f.Passages[0].Passage.Heading[1] != "Equipment" {
			t.Fatalf("a passage stored without a vector: %+v", f)
		}
	})
}
