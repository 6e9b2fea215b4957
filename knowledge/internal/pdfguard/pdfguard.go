// Package pdfguard bounds what a PDF's compressed streams unpack to
// before a PDF reader inflates them whole: the knowledge library's guard
// against decompression bombs (see Check).
package pdfguard

import (
	"bufio"
	"bytes"
	"compress/flate"
	"compress/zlib"
	"encoding/ascii85"
	"errors"
	"io"
	"strconv"

	gh "github.com/gatehouse/gatehouse"
	"github.com/gatehouse/gatehouse/knowledge/internal/docerr"
)

// The decompression-bomb guard. The PDF reader inflates a stream whole as
// it reads it (page content, ToUnicode maps, object and cross-reference
// streams), before the text bound is checked, so a small PDF whose
// FlateDecode stream inflates to gigabytes could exhaust the process.
// Before the reader sees a PDF, Check finds its streams in the raw
// bytes, runs each one's filters (FlateDecode and ASCII85Decode, alone or
// chained: the only ones the reader decodes; it refuses the others) through
// the standard library's decoders into io.Discard, never holding the
// inflated bytes, and refuses the document with docerr.TooLarge when
//
//   - the streams together inflate to more than the bound (the library's
//     MaxTextBytes: 80 MiB by default), or
//   - one stream, past 1 MiB, inflates to more than 256 times its
//     compressed size (text, fonts and drawings compress 3–20×; zeros
//     compress about 1,000×).
//
// Image streams (/Subtype /Image) are never decoded by the text reader:
// they are held to their declared size (width × height × components ×
// bits) and not counted in the total, so a scan with large Flate images
// is not refused. A Flate stream that does not decompress is a broken
// document (docerr.Broken), unless it is an image or the file is encrypted
// (its streams are ciphertext the guard cannot read; the reader's page
// bound below still applies). extractPDF then bounds, through the reader
// itself, the content streams of each page it reads, which covers files
// encrypted with only an owner password too. A stream whose dictionary is
// itself inside an object stream is bounded only as page content.
const (
	bombRatio      = 256
	bombRatioFloor = 1 << 20
	inflateStep    = 256 << 10
)

// Budget counts the inflated bytes of one document's streams.
type Budget struct {
	name  string
	limit int64
	total int64
}

// tooLarge is the refusal when the streams together are over the bound.
func (b *Budget) tooLarge(what string) error {
	return gh.Wrap(gh.CodePayloadTooLarge, docerr.TooLarge,
		"%s: %s inflates past the library's bound of %d bytes of decompressed PDF streams (a decompression bomb?)", b.name, what, b.limit)
}

// drain reads rd to its end into io.Discard, a step at a time, counting
// into the budget (when counted) and refusing past the per-stream cap
// (own, 0 for none) or an absurd ratio to the compressed bytes read so
// far (consumed, nil for no ratio check). It returns the inflated size,
// the refusal, and the decoder's error, if any.
func (b *Budget) drain(what string, rd io.Reader, consumed func() int64, counted bool, own int64) (n int64, refusal, decodeErr error) {
	for {
		step := int64(inflateStep)
		if counted {
			step = min(step, b.limit-b.total+1)
		}
		if own > 0 {
			step = min(step, own-n+1)
		}
		m, err := io.CopyN(io.Discard, rd, max(step, 1))
		n += m
		if counted {
			b.total += m
			if b.total > b.limit {
				return n, b.tooLarge(what), nil
			}
		}
		if own > 0 && n > own {
			return n, gh.Wrap(gh.CodePayloadTooLarge, docerr.TooLarge,
				"%s: %s inflates past the %d bytes its dimensions allow (a decompression bomb?)", b.name, what, own), nil
		}
		if consumed == nil || n <= bombRatioFloor {
			// no ratio to check
		} else if c := consumed(); n > bombRatio*max(c, 1) {
			return n, gh.Wrap(gh.CodePayloadTooLarge, docerr.TooLarge,
				"%s: %s inflates %d bytes of compressed data to over %d (more than %d×: a decompression bomb)", b.name, what, c, n, bombRatio), nil
		}
		if err == io.EOF {
			return n, nil, nil
		}
		if err != nil {
			return n, nil, err
		}
	}
}

// Check checks a PDF's raw streams before the reader sees it; see the
// comment above. limit bounds the inflated streams together.
func Check(name string, data []byte, limit int64) error {
	b := &Budget{name: name, limit: limit}
	s := &pdfScan{data: data, work: 16*int64(len(data)) + 1<<20}
	encrypted := false
	var broken error
	seen := map[int]bool{} // stream data offsets already checked
	// Every object the reader can load starts "N G obj" where the
	// cross-reference table points, and trailers follow "trailer": each
	// such keyword anywhere in the file is read from, so bytes crafted
	// to mislead a front-to-back scan hide nothing.
	kw := &keywords{data: data, obj: -2, trailer: -2}
	for from := 0; ; {
		at := kw.next(from)
		if at < 0 {
			break
		}
		from = at + 3
		if data[at] == 't' {
			from = at + len("trailer")
		}
		if at > 0 && !isPDFDelim(data[at-1]) || from < len(data) && !isPDFDelim(data[from]) {
			continue // endobj, or part of a longer word
		}
		s.pos = from
		v, ok := s.value(0)
		if s.work < 0 {
			return gh.Wrap(gh.CodeInvalid, docerr.Broken, "%s: not a readable PDF (its objects do not parse within bounds)", name)
		}
		d, isDict := v.(pdfDict)
		if !ok || !isDict {
			continue
		}
		if _, enc := d["Encrypt"]; enc {
			encrypted = true
		}
		if size, ok := d["Size"].(int64); ok && (size < 0 || size > int64(len(data))+1) {
			if _, root := d["Root"]; root || d["Type"] == pdfName("XRef") {
				return gh.Wrap(gh.CodeInvalid, docerr.Broken, "%s: not a readable PDF (it claims %d objects in %d bytes)", name, size, len(data))
			}
		}
		start, ok := s.streamStart()
		if !ok || seen[start] {
			continue
		}
		seen[start] = true
		// A direct /Length is what the reader reads. Otherwise the data
		// runs to the end of the file: a decoder stops at its stream's
		// end, so a false "endstream" inside the data hides nothing, and
		// what it does not decode does not count in the ratio.
		raw, exact := data[start:], false
		if l, ok := d["Length"].(int64); ok && l >= 0 && l <= int64(len(raw)) {
			raw, exact = raw[:l], true
		}
		what := "the stream of object " + objNumber(data, at)
		if err, decodeErr := b.stream(what, d, raw, exact); err != nil {
			return err
		} else if decodeErr != nil && broken == nil {
			broken = gh.Wrap(gh.CodeInvalid, docerr.Broken, "%s: not a readable PDF (%s does not decompress: %v)", name, what, decodeErr)
		}
	}
	if broken != nil && !encrypted {
		return broken
	}
	return nil
}

// stream runs one stream's filters into the budget. It returns a refusal,
// or, when strict (the stream's extent is known), the error of a Flate
// stream that does not decompress (not one of an image, which the reader
// never decodes).
func (b *Budget) stream(what string, d pdfDict, raw []byte, strict bool) (refusal, decodeErr error) {
	var filters []pdfName
	switch f := d["Filter"].(type) {
	case nil:
		return nil, nil
	case pdfName:
		filters = []pdfName{f}
	case pdfArray:
		for _, x := range f {
			n, ok := x.(pdfName)
			if !ok {
				filters = append(filters, "?")
				continue
			}
			filters = append(filters, n)
		}
	default:
		// An indirect /Filter: the guard cannot see it, so data that
		// looks like zlib is inflated as if it said so, layer after
		// layer.
		filters = []pdfName{"?", "?", "?", "?"}
	}
	image := d["Subtype"] == pdfName("Image")
	br := bytes.NewReader(raw)
	consumed := func() int64 { return int64(len(raw)) - int64(br.Len()) }
	var rd io.Reader = br
	flated, sniffed := false, false
	for _, f := range filters {
		switch f {
		case "FlateDecode", "Fl":
		case "ASCII85Decode", "A85":
			rd = ascii85.NewDecoder(&ascii85Body{r: bufio.NewReader(rd)})
			continue
		case "?":
			// An indirect filter in the array, or one layer of an
			// indirect /Filter: inflated if it looks like zlib.
			peek := bufio.NewReader(rd)
			rd = peek
			if head, _ := peek.Peek(2); !looksZlib(head) {
				if !flated {
					return nil, nil
				}
				return b.finish(what, rd, consumed, image, d, false)
			}
			sniffed = true
		default:
			// A filter the reader does not decode: it refuses the stream
			// if it ever reads it, so nothing past here inflates.
			if !flated {
				return nil, nil
			}
			return b.finish(what, rd, consumed, image, d, strict)
		}
		zr, err := zlib.NewReader(rd)
		if err != nil {
			if image || sniffed || !strict {
				return nil, nil
			}
			return nil, err
		}
		rd, flated = zr, true
	}
	if !flated {
		return nil, nil
	}
	refusal, decodeErr = b.finish(what, rd, consumed, image, d, strict && !sniffed)
	return refusal, decodeErr
}

// finish drains a decoded stream: an image held to its dimensions and not
// counted, anything else counted. Only corrupt data, not a truncated end
// (common, and the reader decides), is a decode error.
func (b *Budget) finish(what string, rd io.Reader, consumed func() int64, image bool, d pdfDict, strict bool) (error, error) {
	own := int64(0)
	if image {
		own = imageBytes(d)
	}
	if own > 0 {
		consumed = nil // a blank scan compresses 1,000×: its size is the bound
	}
	_, refusal, err := b.drain(what, rd, consumed, own == 0, own)
	if refusal != nil || err == nil || image || !strict {
		return refusal, nil
	}
	var corrupt flate.CorruptInputError
	if errors.As(err, &corrupt) || errors.Is(err, zlib.ErrHeader) || errors.Is(err, zlib.ErrDictionary) {
		return nil, err
	}
	return nil, nil
}

// imageBytes is the most an image's samples can take, with a byte per
// row for PNG predictors; 0 when its dimensions are not plain numbers.
func imageBytes(d pdfDict) int64 {
	w, _ := d["Width"].(int64)
	h, _ := d["Height"].(int64)
	bpc, ok := d["BitsPerComponent"].(int64)
	if !ok {
		bpc = 8
	}
	if w <= 0 || h <= 0 || w > 1<<20 || h > 1<<20 || bpc <= 0 || bpc > 16 {
		return 0
	}
	comps := int64(4) // CMYK, the most a colour space of a name has
	if d["ImageMask"] == true {
		comps, bpc = 1, 1
	}
	return h*((w*comps*bpc+7)/8+1) + 1024
}

// looksZlib reports whether data starts with a zlib header.
func looksZlib(data []byte) bool {
	return len(data) >= 2 && data[0]&0x0f == 8 && data[0]>>4 <= 7 && (uint16(data[0])<<8|uint16(data[1]))%31 == 0
}

// ascii85Body feeds encoding/ascii85 the body of an ASCII85 stream: no
// "<~" prefix, nothing from the "~>" end on.
type ascii85Body struct {
	r     *bufio.Reader
	start bool
	done  bool
}

func (a *ascii85Body) Read(p []byte) (int, error) {
	if !a.start {
		a.start = true
		for {
			c, err := a.r.ReadByte()
			if err != nil {
				return 0, err
			}
			if isPDFSpace(c) {
				continue
			}
			if c == '<' {
				if next, err := a.r.Peek(1); err == nil && next[0] == '~' {
					_, _ = a.r.ReadByte()
					break
				}
			}
			_ = a.r.UnreadByte()
			break
		}
	}
	n := 0
	for n < len(p) && !a.done {
		c, err := a.r.ReadByte()
		if err != nil {
			if n > 0 {
				return n, nil
			}
			return 0, err
		}
		if c == '~' {
			a.done = true
			break
		}
		p[n] = c
		n++
	}
	if n == 0 && a.done {
		return 0, io.EOF
	}
	return n, nil
}

// keywords finds "obj" and "trailer" in data, in order, each search
// resuming where the last found one was (linear over the file).
type keywords struct {
	data         []byte
	obj, trailer int // next occurrence at or after from, -1 for none, -2 unknown
}

func (k *keywords) next(from int) int {
	find := func(cached *int, word string) int {
		if *cached == -1 || *cached >= from {
			return *cached
		}
		if i := bytes.Index(k.data[from:], []byte(word)); i >= 0 {
			*cached = from + i
		} else {
			*cached = -1
		}
		return *cached
	}
	i, j := find(&k.obj, "obj"), find(&k.trailer, "trailer")
	if i < 0 || j >= 0 && j < i {
		return j
	}
	return i
}

// objNumber is the "N G" before an "obj" keyword at, for messages.
func objNumber(data []byte, at int) string {
	i := at
	for i > 0 && i > at-32 && (isPDFSpace(data[i-1]) || data[i-1] >= '0' && data[i-1] <= '9') {
		i--
	}
	f := bytes.Fields(data[i:at])
	if len(f) >= 2 {
		return string(f[len(f)-2])
	}
	return "at byte " + strconv.Itoa(at)
}

// A minimal reader of PDF objects, enough to see a stream's dictionary.
type (
	pdfName  string
	pdfDict  map[pdfName]any
	pdfArray []any
	pdfRef   struct{}
	pdfWord  string // a keyword other than true, false, null, R
)

type pdfScan struct {
	data []byte
	pos  int
	work int64 // bytes left to parse, across all objects
}

func isPDFSpace(c byte) bool {
	return c == 0 || c == '\t' || c == '\n' || c == '\f' || c == '\r' || c == ' '
}

func isPDFDelim(c byte) bool {
	return isPDFSpace(c) || bytes.IndexByte([]byte("()<>[]{}/%"), c) >= 0
}

// skip passes white space and comments.
func (s *pdfScan) skip() {
	for s.pos < len(s.data) {
		c := s.data[s.pos]
		switch {
		case isPDFSpace(c):
			s.pos++
		case c == '%':
			for s.pos < len(s.data) && s.data[s.pos] != '\n' && s.data[s.pos] != '\r' {
				s.pos++
			}
		default:
			return
		}
	}
}

// value reads one object from pos: a dictionary, an array, a name, a
// number (or indirect reference) or a word; strings are read over.
func (s *pdfScan) value(depth int) (any, bool) {
	if depth == 0 {
		start := s.pos
		defer func() { s.work -= int64(s.pos - start) }()
	}
	s.skip()
	if s.pos >= len(s.data) || depth > 64 || s.work < 0 {
		return nil, false
	}
	d := s.data
	switch c := d[s.pos]; {
	case c == '<' && s.pos+1 < len(d) && d[s.pos+1] == '<':
		s.pos += 2
		dict := pdfDict{}
		for {
			s.skip()
			if s.pos+1 < len(d) && d[s.pos] == '>' && d[s.pos+1] == '>' {
				s.pos += 2
				return dict, true
			}
			k, ok := s.value(depth + 1)
			key, isName := k.(pdfName)
			if !ok || !isName {
				return nil, false
			}
			v, ok := s.value(depth + 1)
			if !ok {
				return nil, false
			}
			dict[key] = v
		}
	case c == '[':
		s.pos++
		var arr pdfArray
		for {
			s.skip()
			if s.pos < len(d) && d[s.pos] == ']' {
				s.pos++
				return arr, true
			}
			v, ok := s.value(depth + 1)
			if !ok {
				return nil, false
			}
			arr = append(arr, v)
		}
	case c == '(':
		nest := 0
		for s.pos < len(d) {
			switch d[s.pos] {
			case '\\':
				s.pos++
			case '(':
				nest++
			case ')':
				nest--
				if nest == 0 {
					s.pos++
					return "", true
				}
			}
			s.pos++
		}
		return nil, false
	case c == '<':
		e := bytes.IndexByte(d[s.pos:], '>')
		if e < 0 {
			return nil, false
		}
		s.pos += e + 1
		return "", true
	case c == '/':
		s.pos++
		var name []byte
		for s.pos < len(d) && !isPDFDelim(d[s.pos]) {
			if d[s.pos] == '#' && s.pos+2 < len(d) {
				if x, err := strconv.ParseUint(string(d[s.pos+1:s.pos+3]), 16, 8); err == nil {
					name = append(name, byte(x))
					s.pos += 3
					continue
				}
			}
			name = append(name, d[s.pos])
			s.pos++
		}
		return pdfName(name), true
	case isPDFDelim(c):
		return nil, false
	default:
		w := s.pos
		for s.pos < len(d) && !isPDFDelim(d[s.pos]) {
			s.pos++
		}
		word := string(d[w:s.pos])
		if n, err := strconv.ParseInt(word, 10, 64); err == nil {
			// "N G R" is a reference: look ahead without consuming
			// anything else.
			save := s.pos
			s.skip()
			g := s.pos
			for s.pos < len(d) && d[s.pos] >= '0' && d[s.pos] <= '9' {
				s.pos++
			}
			if s.pos > g {
				s.skip()
				if s.pos < len(d) && d[s.pos] == 'R' && (s.pos+1 == len(d) || isPDFDelim(d[s.pos+1])) {
					s.pos++
					return pdfRef{}, true
				}
			}
			s.pos = save
			return n, true
		}
		switch word {
		case "true":
			return true, true
		case "false":
			return false, true
		case "null":
			return nil, true
		}
		return pdfWord(word), true
	}
}

// streamStart is where a stream's data starts when the object read ends
// with the stream keyword (and its end of line).
func (s *pdfScan) streamStart() (int, bool) {
	s.skip()
	d := s.data
	if !bytes.HasPrefix(d[s.pos:], []byte("stream")) {
		return 0, false
	}
	p := s.pos + len("stream")
	switch {
	case p < len(d) && d[p] == '\r':
		p++
		if p < len(d) && d[p] == '\n' {
			p++
		}
	case p < len(d) && d[p] == '\n':
		p++
	default:
		return 0, false
	}
	return p, true
}

// page bounds, through the reader, what it decodes of one page's content
// streams: the same total bound over the pages read, no ratio (the reader
// does not say how many compressed bytes it read). A stream that does not
// decode is left to the reader to refuse.
func (b *Budget) Page(i int, rd io.Reader) error {
	_, refusal, _ := b.drain("the content of page "+strconv.Itoa(i), rd, nil, true, 0)
	return refusal
}

// NewBudget is the bound of the page content one document's reader
// inflates: limit bytes in all, named name in refusals.
func NewBudget(name string, limit int64) *Budget { return &Budget{name: name, limit: limit} }

// Total is how many inflated bytes the budget has counted.
func (b *Budget) Total() int64 { return b.total }
