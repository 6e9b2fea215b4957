package knowledge

import (
	"bytes"
	"compress/flate"
	"compress/zlib"
	"encoding/ascii85"
	"encoding/binary"
	"errors"
	"fmt"
	"image"
	"image/png"
	"io"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/gatehouse/gatehouse/knowledge/internal/pdfguard"

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

// BuildPDF writes a PDF 1.4 file of the objects given, numbered from 1
// (the first is the catalog), with a correct cross-reference table. It
// is exported for the knowledge_test package.
func BuildPDF(objects ...[]byte) []byte {
	var b bytes.Buffer
	b.WriteString("%PDF-1.4\n%\xe2\xe3\xcf\xd3\n")
	offsets := make([]int, len(objects))
	for i, o := range objects {
		offsets[i] = b.Len()
		fmt.Fprintf(&b, "%d 0 obj\n", i+1)
		b.Write(o)
		b.WriteString("\nendobj\n")
	}
	xref := b.Len()
	fmt.Fprintf(&b, "xref\n0 %d\n0000000000 65535 f \n", len(objects)+1)
	for _, off := range offsets {
		fmt.Fprintf(&b, "%010d 00000 n \n", off)
	}
	fmt.Fprintf(&b, "trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n", len(objects)+1, xref)
	return b.Bytes()
}

// PDFStream is a stream object: its dictionary entries (without /Length)
// and its raw data.
func PDFStream(dict string, data []byte) []byte {
	return append(append([]byte(fmt.Sprintf("<< %s /Length %d >>\nstream\n", dict, len(data))), data...), "\nendstream"...)
}

// Zlib compresses data.
func Zlib(data []byte) []byte {
	var b bytes.Buffer
	w := zlib.NewWriter(&b)
	_, _ = w.Write(data)
	_ = w.Close()
	return b.Bytes()
}

// ZipBomb is 200 MiB of zeros compressed with zlib (about 200 KB). Only
// 2 MiB go through the compressor: once its window holds nothing but
// zeros, the deflate blocks of the next megabyte of zeros (ended with a
// sync flush, so on a byte boundary) mean the same megabyte wherever they
// follow zeros, and are repeated. The Adler-32 of n zeros is n<<16 | 1.
var ZipBomb = sync.OnceValue(func() []byte {
	var block bytes.Buffer
	w, _ := flate.NewWriter(&block, flate.BestCompression)
	zeros := make([]byte, 1<<20)
	_, _ = w.Write(zeros)
	_ = w.Flush()
	first := bytes.Clone(block.Bytes())
	block.Reset()
	_, _ = w.Write(zeros)
	_ = w.Flush()
	steady := bytes.Clone(block.Bytes())
	block.Reset()
	_ = w.Close() // an empty final block: the 2 MiB above are all written
	out := append([]byte{0x78, 0xda}, first...)
	for range 199 {
		out = append(out, steady...)
	}
	out = append(out, block.Bytes()...)
	const n = 200 << 20
	return binary.BigEndian.AppendUint32(out, uint32(n%65521)<<16|1)
})

// OnePagePDF is a PDF whose one page's content is the given stream object
// (object 5), with extra objects after it (6, 7, …).
func OnePagePDF(content []byte, extra ...[]byte) []byte {
	return BuildPDF(append([][]byte{
		[]byte("<< /Type /Catalog /Pages 2 0 R >>"),
		[]byte("<< /Type /Pages /Kids [3 0 R] /Count 1 >>"),
		[]byte("<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>"),
		[]byte("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>"),
		content,
	}, extra...)...)
}

const helloContent = "BT /F1 12 Tf 72 720 Td (Compressed streams still extract.) Tj ET"

func TestExtractCompressedPDF(t *testing.T) {
	for _, tc := range []struct {
		name string
		pdf  []byte
	}{
		{"flate.pdf", OnePagePDF(PDFStream("/Filter /FlateDecode", Zlib([]byte(helloContent))))},
		{"array.pdf", OnePagePDF(PDFStream("/Filter [/FlateDecode]", Zlib([]byte(helloContent))))},
		{"chain.pdf", OnePagePDF(PDFStream("/Filter [/ASCII85Decode /FlateDecode]", a85(Zlib([]byte(helloContent)))))},
		// A large blank image compresses about 1,000×: its declared size,
		// not the ratio, bounds it, and it is not counted in the total.
		{"scan.pdf", OnePagePDF(PDFStream("/Filter /FlateDecode", Zlib([]byte(helloContent))),
			PDFStream("/Type /XObject /Subtype /Image /Width 1000 /Height 1000 /ColorSpace /DeviceRGB /BitsPerComponent 8 /Filter /FlateDecode",
				Zlib(make([]byte, 1000*1000*3))))},
	} {
		x, err := extract(tc.name, TypePDF, tc.pdf, 8<<20)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if !strings.Contains(x.text, "Compressed streams still extract.") || len(x.blocks) != 1 || x.blocks[0].heading[0] != "Page 1" {
			t.Errorf("%s: text %q, blocks %+v", tc.name, x.text, x.blocks)
		}
	}
	// fpdf compresses its page content and fonts: TestExtractPDF's
	// fixtures pass the guard too, and an encrypted one is still
	// ErrEncrypted, not broken. Here with a large blank PNG, which fpdf
	// embeds as a Flate image with a PNG predictor.
	var img bytes.Buffer
	if err := png.Encode(&img, image.NewGray(image.Rect(0, 0, 1500, 1500))); err != nil {
		t.Fatal(err)
	}
	f := fpdf.New("P", "mm", "A4", "")
	f.SetFont("Helvetica", "", 12)
	f.AddPage()
	f.RegisterImageOptionsReader("blank", fpdf.ImageOptions{ImageType: "PNG"}, &img)
	f.ImageOptions("blank", 10, 30, 100, 100, false, fpdf.ImageOptions{ImageType: "PNG"}, 0, "")
	f.Cell(40, 10, "A page with a picture.")
	var buf bytes.Buffer
	if err := f.Output(&buf); err != nil {
		t.Fatal(err)
	}
	if x, err := extract("picture.pdf", TypePDF, buf.Bytes(), 1<<20); err != nil || !strings.Contains(x.text, "A page with a picture.") {
		t.Errorf("a PDF with a large blank image: %q %v", x.text, err)
	}
}

// falseEnd is the bomb with a stored (uncompressed) deflate block first
// that holds "endstream" as it is: a zlib header, the stored block, then
// the bomb's own deflate blocks (both start on a byte boundary).
func falseEnd(bomb []byte) []byte {
	text := []byte("\nendstream\nendobj\n")
	out := append([]byte{}, bomb[:2]...)
	out = append(out, 0, byte(len(text)), 0, ^byte(len(text)), 0xff)
	out = append(out, text...)
	return append(out, bomb[2:]...)
}

func a85(data []byte) []byte {
	out := make([]byte, ascii85.MaxEncodedLen(len(data)))
	n := ascii85.Encode(out, data)
	return append(out[:n], "~>"...)
}

func TestExtractRefusesZipBombs(t *testing.T) {
	bomb := ZipBomb()
	if len(bomb) > 512<<10 {
		t.Fatalf("the bomb is %d bytes compressed", len(bomb))
	}
	random := make([]byte, 3<<20) // compresses barely: only the total stops it
	r := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < len(random); i += 8 {
		for j, x := 0, r.Uint64(); j < 8; j, x = j+1, x>>8 {
			random[i+j] = 'a' + byte(x)%26
		}
	}
	page := PDFStream("/Filter /FlateDecode", Zlib([]byte(helloContent)))
	for _, tc := range []struct {
		name string
		pdf  []byte
	}{
		{"content.pdf", OnePagePDF(PDFStream("/Filter /FlateDecode", bomb))},
		{"array.pdf", OnePagePDF(PDFStream("/Filter [/FlateDecode]", bomb))},
		{"chain.pdf", OnePagePDF(PDFStream("/Filter [/ASCII85Decode /FlateDecode]", a85(bomb)))},
		{"escaped.pdf", OnePagePDF(PDFStream("/Filter /Fl#61teDecode", bomb))},
		{"indirect.pdf", OnePagePDF(PDFStream("/Filter 6 0 R", bomb), []byte("/FlateDecode"))},
		// An indirect /Length and a false "endstream" early in the data
		// (a stored deflate block) do not cut the stream short.
		{"length.pdf", OnePagePDF(append(append([]byte("<< /Filter /FlateDecode /Length 6 0 R >>\nstream\n"), falseEnd(bomb)...), "\nendstream"...),
			[]byte(strconv.Itoa(len(falseEnd(bomb)))))},
		{"falseend.pdf", OnePagePDF(PDFStream("/Filter /FlateDecode", falseEnd(bomb)))},
		{"double.pdf", OnePagePDF(PDFStream("/Filter [/FlateDecode /FlateDecode]", Zlib(bomb)))},
		{"mixed.pdf", OnePagePDF(PDFStream("/Filter [/FlateDecode 6 0 R]", Zlib(bomb)), []byte("/FlateDecode"))},
		{"indirect2.pdf", OnePagePDF(PDFStream("/Filter 6 0 R", Zlib(bomb)), []byte("[/FlateDecode /FlateDecode]"))},
		{"objstm.pdf", OnePagePDF(page, PDFStream("/Type /ObjStm /N 1 /First 4 /Filter /FlateDecode", bomb))},
		{"unused.pdf", OnePagePDF(page, PDFStream("/Filter /FlateDecode", Zlib(random)))},
		{"image.pdf", OnePagePDF(page, PDFStream("/Subtype /Image /Width 10 /Height 10 /BitsPerComponent 8 /Filter /FlateDecode", bomb))},
	} {
		_, err := extract(tc.name, TypePDF, tc.pdf, 2<<20)
		t.Logf("%s: %v", tc.name, err)
		if !errors.Is(err, ErrTooLarge) || !gh.IsCode(err, gh.CodePayloadTooLarge) || !strings.Contains(err.Error(), tc.name) || !strings.Contains(err.Error(), "decompression bomb") {
			t.Errorf("%s (%d bytes): %v, want ErrTooLarge naming the file and the bomb", tc.name, len(tc.pdf), err)
		}
	}
	// With the default bound (80 MiB), the ratio stops the bomb after a
	// megabyte.
	if _, err := extract("content.pdf", TypePDF, OnePagePDF(PDFStream("/Filter /FlateDecode", bomb)), 80<<20); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "more than 256×") {
		t.Errorf("bomb under the default bound: %v", err)
	}
}

func TestExtractBrokenFlate(t *testing.T) {
	z := Zlib([]byte(strings.Repeat(helloContent+"\n", 50)))
	corrupt := append(append([]byte{}, z[:2]...), bytes.Repeat([]byte{0xff}, 64)...)
	for _, tc := range []struct {
		name string
		pdf  []byte
	}{
		{"corrupt.pdf", OnePagePDF(PDFStream("/Filter /FlateDecode", corrupt))},
		{"header.pdf", OnePagePDF(PDFStream("/Filter /FlateDecode", []byte("not zlib at all")))},
		{"truncated.pdf", OnePagePDF(PDFStream("/Filter /FlateDecode", z[:len(z)/2]))},
		{"lying.pdf", []byte("%PDF-1.5\n1 0 obj\n<< /Type /XRef /Size 4000000000 /Root 2 0 R >>\nendobj\n")},
	} {
		_, err := extract(tc.name, TypePDF, tc.pdf, 1<<20)
		t.Logf("%s: %v", tc.name, err)
		if !errors.Is(err, ErrBroken) || !gh.IsCode(err, gh.CodeInvalid) || !strings.Contains(err.Error(), tc.name) {
			t.Errorf("%s: %v, want ErrBroken naming the file", tc.name, err)
		}
	}
}

func TestPageContentBound(t *testing.T) {
	// What the reader decodes of a page is bounded too (the guard of the
	// raw bytes cannot read an encrypted file's streams).
	b := pdfguard.NewBudget("locked.pdf", 1<<20)
	zr, err := zlib.NewReader(bytes.NewReader(ZipBomb()))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Page(3, zr); !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "locked.pdf: the content of page 3") {
		t.Fatalf("page bound: %v", err)
	}
	b = pdfguard.NewBudget("fine.pdf", 1<<20)
	if err := b.Page(1, io.LimitReader(zr, 1000)); err != nil || b.Total() != 1000 {
		t.Fatalf("a small page: %v, counted %d", err, b.Total())
	}
}
