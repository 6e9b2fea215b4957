package knowledge

import (
	"errors"
	"mime"
	"net/http"
	"path"
	"strings"
	"unicode/utf8"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/knowledge/internal/docerr"
)

// Bad input. Each is returned wrapped in a *gh.Error whose message says
// what was wrong with which file (errors.Is finds the sentinel): nothing
// of a refused file is indexed.
var (
	// ErrTooLarge: the file, or the text extracted from it, is over the
	// configured bound, or a PDF's compressed streams inflate past the
	// text bound or at an absurd ratio: a zip bomb, see pdfguard.go
	// (CodePayloadTooLarge).
	ErrTooLarge = docerr.TooLarge
	// ErrBinary: a file said to be text (by its name or media type) holds
	// binary data (CodeInvalid).
	ErrBinary = errors.New("binary data in a text document")
	// ErrUnsupported: a format the library does not read (CodeInvalid).
	ErrUnsupported = errors.New("unsupported document format")
	// ErrEncrypted: a PDF that needs a password (CodeInvalid).
	ErrEncrypted = errors.New("encrypted document")
	// ErrBroken: a file that does not parse as its format (CodeInvalid).
	ErrBroken = docerr.Broken
	// ErrNoText: a document with no text to index, e.g. a scanned PDF
	// (CodeInvalid).
	ErrNoText = errors.New("document has no text")
)

// Media types the library reads.
const (
	TypeText     = "text/plain"
	TypeMarkdown = "text/markdown"
	TypeHTML     = "text/html"
	TypePDF      = "application/pdf"
)

var byExtension = map[string]string{
	".txt": TypeText, ".text": TypeText, ".log": TypeText,
	".md": TypeMarkdown, ".markdown": TypeMarkdown,
	".html": TypeHTML, ".htm": TypeHTML, ".xhtml": TypeHTML,
	".pdf": TypePDF,
}

// Supported reports whether a file of that name is one the library reads
// by its extension (the watcher indexes only those).
func Supported(name string) bool { _, ok := byExtension[strings.ToLower(path.Ext(name))]; return ok }

// mediaType decides what a file is: the declared type when it is one the
// library reads, else the name's extension, else a sniff of the bytes.
func mediaType(name, declared string, data []byte) string {
	if mt, _, err := mime.ParseMediaType(declared); err == nil {
		switch mt {
		case "text/x-markdown":
			return TypeMarkdown
		case "application/xhtml+xml":
			return TypeHTML
		case TypeText, TypeMarkdown, TypeHTML, TypePDF:
			// A generic text/plain for a .md file is still Markdown.
			if ext := byExtension[strings.ToLower(path.Ext(name))]; mt == TypeText && ext == TypeMarkdown {
				return ext
			}
			return mt
		}
		if mt != "application/octet-stream" {
			return mt // refused below, by its own name
		}
	}
	if mt, ok := byExtension[strings.ToLower(path.Ext(name))]; ok {
		return mt
	}
	mt, _, _ := mime.ParseMediaType(http.DetectContentType(data))
	return mt
}

// extracted is a document's text and where its blocks (paragraphs, code
// blocks, list runs) sit in it, each under its heading path.
type extracted struct {
	text   string
	title  string
	blocks []block
}

type block struct {
	heading    []string
	start, end int
}

// extract reads a document's text by its media type.
func extract(name, mt string, data []byte, maxText int64) (extracted, error) {
	var x extracted
	var err error
	switch mt {
	case TypeText, TypeMarkdown, TypeHTML:
		if err := checkText(name, data); err != nil {
			return x, err
		}
		switch mt {
		case TypeText:
			x = scanText(string(data), false)
		case TypeMarkdown:
			x = scanText(string(data), true)
		default:
			x, err = extractHTML(data)
		}
	case TypePDF:
		x, err = extractPDF(name, data, maxText)
	default:
		return x, gh.Wrap(gh.CodeInvalid, ErrUnsupported, "%s: %s is not a format the library reads (Markdown, plain text, HTML or PDF)", name, mt)
	}
	if err != nil {
		return x, err
	}
	if int64(len(x.text)) > maxText {
		return x, gh.Wrap(gh.CodePayloadTooLarge, ErrTooLarge, "%s: its text is %d bytes, over the library's bound of %d", name, len(x.text), maxText)
	}
	if len(x.blocks) == 0 {
		return x, gh.Wrap(gh.CodeInvalid, ErrNoText, "%s: no text to index", name)
	}
	return x, nil
}

// checkText refuses binary data in a file said to be text: a NUL byte,
// invalid UTF-8, or a sniff that finds a binary format.
func checkText(name string, data []byte) error {
	head := data[:min(len(data), 512)]
	sniffed, _, _ := mime.ParseMediaType(http.DetectContentType(head))
	switch {
	case strings.IndexByte(string(head), 0) >= 0 || strings.IndexByte(string(data), 0) >= 0:
		return gh.Wrap(gh.CodeInvalid, ErrBinary, "%s: holds NUL bytes, so it is binary, not text", name)
	case !utf8.Valid(data):
		return gh.Wrap(gh.CodeInvalid, ErrBinary, "%s: is not UTF-8 text", name)
	case !strings.HasPrefix(sniffed, "text/"):
		return gh.Wrap(gh.CodeInvalid, ErrBinary, "%s: its bytes are %s, not text", name, sniffed)
	}
	return nil
}

// scanText finds the blocks of plain text (paragraphs between blank lines)
// or Markdown (also ATX and setext headings, whose path each block keeps,
// and fenced code blocks, kept whole and never read for headings). Offsets
// are into the file itself.
func scanText(text string, markdown bool) extracted {
	x := extracted{text: text}
	type level struct {
		n     int
		title string
	}
	var path []level
	headingPath := func() []string {
		out := make([]string, len(path))
		for i, l := range path {
			out[i] = l.title
		}
		return out
	}
	setHeading := func(n int, title string) {
		for len(path) > 0 && path[len(path)-1].n >= n {
			path = path[:len(path)-1]
		}
		path = append(path, level{n, title})
		if x.title == "" {
			x.title = title
		}
	}
	start, end, lines := -1, -1, 0 // the open block
	flush := func() {
		if start >= 0 {
			x.blocks = append(x.blocks, block{heading: headingPath(), start: start, end: end})
		}
		start, end, lines = -1, -1, 0
	}
	fence := ""
	for off := 0; off < len(text); {
		nl := strings.IndexByte(text[off:], '\n')
		lineEnd := len(text)
		if nl >= 0 {
			lineEnd = off + nl
		}
		line := strings.TrimRight(text[off:lineEnd], "\r")
		trimmed := strings.TrimSpace(line)
		indent := len(line) - len(strings.TrimLeft(line, " "))
		next := lineEnd + 1
		switch {
		case markdown && fence != "":
			end = off + len(line)
			if strings.HasPrefix(trimmed, fence) && strings.Trim(trimmed, fence[:1]) == "" {
				fence = ""
				flush()
			}
		case markdown && indent < 4 && (strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~")):
			flush()
			fence = trimmed[:3]
			start, end = off, off+len(line)
		case trimmed == "":
			flush()
		case markdown && indent < 4 && atxLevel(trimmed) > 0:
			flush()
			n := atxLevel(trimmed)
			setHeading(n, strings.TrimSpace(strings.TrimRight(strings.TrimSpace(trimmed[n:]), "#")))
		case markdown && indent < 4 && lines == 1 && setext(trimmed) > 0:
			title := strings.TrimSpace(text[start:end])
			start, end, lines = -1, -1, 0
			setHeading(setext(trimmed), title)
		default:
			if start < 0 {
				start = off + indent
			}
			end = off + len(line)
			lines++
		}
		off = next
	}
	flush()
	return x
}

// atxLevel is the level of an ATX heading line ("## Title"), 0 for none.
func atxLevel(line string) int {
	n := 0
	for n < len(line) && line[n] == '#' {
		n++
	}
	if n == 0 || n > 6 || n < len(line) && line[n] != ' ' && line[n] != '\t' {
		return 0
	}
	return n
}

// setext is the level a setext underline gives the line above it ("==="
// 1, "---" 2), 0 for none.
func setext(line string) int {
	switch {
	case strings.Trim(line, "=") == "":
		return 1
	case strings.Trim(line, "-") == "" && len(line) >= 2:
		return 2
	}
	return 0
}
