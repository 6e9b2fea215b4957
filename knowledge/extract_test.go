package knowledge

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"codeberg.org/go-pdf/fpdf"

	gh "github.com/gatehouse/gatehouse"
)

func TestExtractHTML(t *testing.T) {
	page := `<!doctype html><html><head><title>Runbook</title><style>h1{color:red}</style><script>var secret = "x";</script></head>
<body><nav>Home</nav><h1>Deploys</h1><p>Run the <b>deploy</b>
script   from main.</p><h2>Rollback</h2><ul><li>Stop traffic</li><li>Restore the backup</li></ul><pre>make   rollback</pre></body></html>`
	x, err := extract("runbook.html", TypeHTML, []byte(page), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if x.title != "Runbook" || strings.Contains(x.text, "secret") || strings.Contains(x.text, "color") {
		t.Fatalf("title %q, text %q", x.title, x.text)
	}
	got := map[string]string{}
	for _, b := range x.blocks {
		got[x.text[b.start:b.end]] = strings.Join(b.heading, " > ")
	}
	for text, heading := range map[string]string{
		"Home": "", "Run the deploy script from main.": "Deploys", "Stop traffic": "Deploys > Rollback",
		"Restore the backup": "Deploys > Rollback", "make   rollback": "Deploys > Rollback",
	} {
		if h, ok := got[text]; !ok || h != heading {
			t.Errorf("block %q: heading %q (found %v), want %q; blocks %q", text, h, ok, heading, got)
		}
	}
}

func TestExtractRefusesBadInput(t *testing.T) {
	png := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{0, 1, 2}, 50)...)
	for _, tc := range []struct {
		name, mt string
		data     []byte
		want     error
	}{
		{"notes.txt", TypeText, png, ErrBinary},
		{"notes.md", TypeMarkdown, []byte("hello\x00world"), ErrBinary},
		{"notes.txt", TypeText, []byte("caf\xe9 latin-1"), ErrBinary},
		{"photo.png", "image/png", png, ErrUnsupported},
		{"report.pdf", TypePDF, []byte("%PDF-1.4\nthis is not a pdf at all\n"), ErrBroken},
		{"empty.md", TypeMarkdown, []byte("\n\n   \n"), ErrNoText},
	} {
		_, err := extract(tc.name, tc.mt, tc.data, 1<<20)
		if !errors.Is(err, tc.want) || !gh.IsCode(err, gh.CodeInvalid) || !strings.Contains(err.Error(), tc.name) {
			t.Errorf("%s (%s): %v, want %v with code invalid naming the file", tc.name, tc.mt, err, tc.want)
		}
	}
	if mt := mediaType("notes.txt", "", png); mt != TypeText {
		t.Errorf("a .txt file is %q by its name", mt)
	}
}

// makePDF writes a small PDF with fpdf: two pages of text, optionally
// encrypted with a user password.
func makePDF(t *testing.T, password string) []byte {
	t.Helper()
	f := fpdf.New("P", "mm", "A4", "")
	f.SetTitle("Security policy", false)
	if password != "" {
		f.SetProtection(fpdf.CnProtectPrint, password, "owner")
	}
	f.SetFont("Helvetica", "", 12)
	f.AddPage()
	f.Cell(40, 10, "Passwords rotate every ninety days.")
	f.Ln(12)
	f.Cell(40, 10, "Laptops use full disk encryption.")
	f.AddPage()
	f.Cell(40, 10, "Report incidents to the security desk.")
	var buf bytes.Buffer
	if err := f.Output(&buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestExtractPDF(t *testing.T) {
	x, err := extract("policy.pdf", TypePDF, makePDF(t, ""), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	if x.title != "Security policy" || len(x.blocks) != 2 {
		t.Fatalf("title %q, blocks %+v, text %q", x.title, x.blocks, x.text)
	}
	first, second := x.text[x.blocks[0].start:x.blocks[0].end], x.text[x.blocks[1].start:x.blocks[1].end]
	if !strings.Contains(first, "Passwords rotate every ninety days.") || !strings.Contains(first, "full disk encryption") ||
		x.blocks[0].heading[0] != "Page 1" || !strings.Contains(second, "security desk") || x.blocks[1].heading[0] != "Page 2" {
		t.Fatalf("pages: %q %v / %q %v", first, x.blocks[0].heading, second, x.blocks[1].heading)
	}
	if _, err := extract("locked.pdf", TypePDF, makePDF(t, "secret"), 1<<20); !errors.Is(err, ErrEncrypted) || !gh.IsCode(err, gh.CodeInvalid) {
		t.Fatalf("encrypted PDF: %v", err)
	}
	if _, err := extract("policy.pdf", TypePDF, makePDF(t, ""), 10); !errors.Is(err, ErrTooLarge) || !gh.IsCode(err, gh.CodePayloadTooLarge) {
		t.Fatalf("a PDF whose text is over the bound: %v", err)
	}
}
