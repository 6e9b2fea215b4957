package knowledge

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// piece is one passage before it is stored: a slice of the document's
// text, with the heading path it sits under.
type piece struct {
	heading    []string
	start, end int
}

// split cuts a document's blocks into passages of at most maxBytes. A
// heading starts a new passage; within a section, whole blocks are packed
// together while they fit, and a cut falls, by preference, between
// blocks, then after a sentence or a line, then between words. The next
// passage of the same section repeats up to overlap bytes of the end of
// the one before (from a word boundary). Every passage is a contiguous
// slice of the text, so its offsets are exact.
func split(x extracted, maxBytes, overlap int) []piece {
	var out []piece
	for i := 0; i < len(x.blocks); {
		j := i + 1
		for j < len(x.blocks) && slices.Equal(x.blocks[j].heading, x.blocks[i].heading) {
			j++
		}
		var ends []int // the section's block ends: the preferred cuts
		for _, b := range x.blocks[i:j] {
			ends = append(ends, b.end)
		}
		out = append(out, cutSection(x.text, x.blocks[i].heading, x.blocks[i].start, x.blocks[j-1].end, ends, maxBytes, overlap)...)
		i = j
	}
	return out
}

func cutSection(text string, heading []string, start, end int, ends []int, maxBytes, overlap int) []piece {
	var out []piece
	s := start
	for s < end {
		if end-s <= maxBytes {
			out = append(out, trimmed(text, heading, s, end))
			break
		}
		cut := bestCut(text, s, s+maxBytes, ends)
		out = append(out, trimmed(text, heading, s, cut))
		next := cut
		if overlap > 0 {
			// From the first word boundary in the last overlap bytes.
			from := max(cut-overlap, s+1)
			for from < cut && !utf8.RuneStart(text[from]) {
				from++
			}
			if k := strings.IndexFunc(text[from:cut], unicode.IsSpace); k >= 0 {
				next = from + k
			}
		}
		for next < end && isSpaceByte(text[next]) {
			next++
		}
		if next <= s {
			next = cut
		}
		s = next
	}
	return slices.DeleteFunc(out, func(p piece) bool { return p.end <= p.start })
}

// bestCut picks where a passage starting at s ends, at or before limit:
// the last block end in its second half, else the last sentence or line
// end there, else the last space, else limit (on a rune boundary).
func bestCut(text string, s, limit int, ends []int) int {
	half := s + (limit-s)/2
	for k := len(ends) - 1; k >= 0; k-- {
		if ends[k] <= limit && ends[k] > half {
			return ends[k]
		}
	}
	window := text[half:limit]
	best := -1
	for _, sep := range []string{". ", "? ", "! ", ".\n", "\n"} {
		if k := strings.LastIndex(window, sep); k >= 0 && half+k+1 > best {
			best = half + k + 1
		}
	}
	if best > 0 {
		return best
	}
	if k := strings.LastIndexFunc(window, unicode.IsSpace); k > 0 {
		return half + k
	}
	for limit > s+1 && !utf8.RuneStart(text[limit]) {
		limit--
	}
	return limit
}

func isSpaceByte(b byte) bool { return b == ' ' || b == '\n' || b == '\t' || b == '\r' }

// trimmed is text[s:e] without its surrounding white space, as a piece.
func trimmed(text string, heading []string, s, e int) piece {
	for s < e && isSpaceByte(text[s]) {
		s++
	}
	for e > s && isSpaceByte(text[e-1]) {
		e--
	}
	return piece{heading: heading, start: s, end: e}
}
