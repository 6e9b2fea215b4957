package knowledge

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/ledongthuc/pdf"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/knowledge/internal/pdfguard"
)

// extractPDF reads a PDF's text page by page with github.com/ledongthuc/pdf
// (pure Go, no cgo: the binary stays static). Each page's lines are its
// blocks, under the heading "Page N", so a citation names the page. The
// reader panics on some malformed files; that is a broken document, not a
// crash. The reader inflates a stream whole before the text bound is
// checked, so pdfguard.Check first bounds what the file's streams
// inflate to, and each page's content is bounded again, through the
// reader, before its text is read: both by maxText, the inflated bytes
// allowed across the document.
func extractPDF(name string, data []byte, maxText int64) (x extracted, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = gh.Wrap(gh.CodeInvalid, ErrBroken, "%s: not a readable PDF (%v)", name, r)
		}
	}()
	if err := pdfguard.Check(name, data, maxText); err != nil {
		return x, err
	}
	pages := pdfguard.NewBudget(name, maxText)
	r, err := pdf.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		if errors.Is(err, pdf.ErrInvalidPassword) || strings.Contains(err.Error(), "encrypt") {
			return x, gh.Wrap(gh.CodeInvalid, ErrEncrypted, "%s: the PDF is encrypted and needs a password", name)
		}
		return x, gh.Wrap(gh.CodeInvalid, ErrBroken, "%s: not a readable PDF: %v", name, err)
	}
	var text strings.Builder
	for i := 1; i <= r.NumPage(); i++ {
		p := r.Page(i)
		if p.V.IsNull() {
			continue
		}
		if err := pageContent(pages, i, p.V.Key("Contents")); err != nil {
			return x, err
		}
		rows, err := p.GetTextByRow()
		if err != nil {
			return x, gh.Wrap(gh.CodeInvalid, ErrBroken, "%s: page %d does not read: %v", name, i, err)
		}
		heading := []string{"Page " + strconv.Itoa(i)}
		var para []string
		flush := func() {
			s := strings.TrimSpace(strings.Join(para, "\n"))
			para = para[:0]
			if s == "" {
				return
			}
			if text.Len() > 0 {
				text.WriteString("\n\n")
			}
			start := text.Len()
			text.WriteString(s)
			x.blocks = append(x.blocks, block{heading: heading, start: start, end: text.Len()})
		}
		for _, row := range rows {
			var line strings.Builder
			for _, w := range row.Content {
				line.WriteString(w.S)
			}
			para = append(para, strings.TrimSpace(line.String()))
			if int64(text.Len()) > maxText {
				return x, gh.Wrap(gh.CodePayloadTooLarge, ErrTooLarge, "%s: its text is over the library's bound of %d bytes", name, maxText)
			}
		}
		flush()
	}
	x.text = text.String()
	if t := pdfTitle(r); t != "" {
		x.title = t
	}
	return x, nil
}

// pageContent bounds a page's content streams (one, or an array) as the
// reader decodes them.
func pageContent(b *pdfguard.Budget, i int, v pdf.Value) error {
	switch v.Kind() {
	case pdf.Stream:
		return b.Page(i, v.Reader())
	case pdf.Array:
		for j := 0; j < v.Len(); j++ {
			if s := v.Index(j); s.Kind() == pdf.Stream {
				if err := b.Page(i, s.Reader()); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// pdfTitle is the document information's /Title, if any.
func pdfTitle(r *pdf.Reader) (title string) {
	defer func() {
		if recover() != nil {
			title = ""
		}
	}()
	return strings.TrimSpace(fmt.Sprint(r.Trailer().Key("Info").Key("Title").Text()))
}
