package knowledge_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/knowledge"
	"github.com/gatehouse/gatehouse/store"
)

// A zip bomb sent to the library is refused with a clear error naming the
// file, and nothing of it is stored: not as a new document, and not over
// the document already under its name.
func TestZipBombStoresNothing(t *testing.T) {
	eachBackend(t, func(t *testing.T, st store.Store, _ func(*testing.T) store.Store) {
		ctx := context.Background()
		lib := newLibrary(t, st, knowledge.Config{}) // the default bounds
		good := knowledge.OnePagePDF(knowledge.PDFStream("/Filter /FlateDecode",
			knowledge.Zlib([]byte("BT /F1 12 Tf 72 720 Td (Visitors sign in at the front desk.) Tj ET"))))
		bomb := knowledge.OnePagePDF(knowledge.PDFStream("/Filter /FlateDecode", knowledge.ZipBomb()))

		_, _, err := lib.Add(ctx, knowledge.AddRequest{Collection: knowledge.Shared, Name: "bomb.pdf", Source: "api", Data: bomb})
		if !errors.Is(err, knowledge.ErrTooLarge) || !gh.IsCode(err, gh.CodePayloadTooLarge) ||
			!strings.Contains(err.Error(), "bomb.pdf:") || !strings.Contains(err.Error(), "decompression bomb") {
			t.Fatalf("a zip bomb: %v", err)
		}
		if docs, err := lib.Documents(ctx, ""); err != nil || len(docs) != 0 {
			t.Fatalf("the refused bomb was stored: %+v %v", docs, err)
		}

		doc, changed, err := lib.Add(ctx, knowledge.AddRequest{Collection: knowledge.Shared, Name: "visitors.pdf", Source: "api", Data: good})
		if err != nil || !changed || doc.MediaType != knowledge.TypePDF {
			t.Fatalf("a compressed PDF: %+v %v %v", doc, changed, err)
		}
		// A bomb under the same name leaves the old version whole.
		if _, _, err := lib.Add(ctx, knowledge.AddRequest{Collection: knowledge.Shared, Name: "visitors.pdf", Source: "api", Data: bomb}); !errors.Is(err, knowledge.ErrTooLarge) {
			t.Fatalf("a bomb replacing a document: %v", err)
		}
		docs, err := lib.Documents(ctx, "")
		if err != nil || len(docs) != 1 || docs[0].Hash != doc.Hash || docs[0].Version != doc.Version {
			t.Fatalf("after the refused replacement: %+v %v, want %+v", docs, err, doc)
		}
		if ps, err := lib.Passages(ctx, doc.ID); err != nil || len(ps) != 1 || !strings.Contains(ps[0].Text, "front desk") {
			t.Fatalf("passages after the refused replacement: %+v %v", ps, err)
		}
	})
}
