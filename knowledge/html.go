package knowledge

import (
	"bytes"
	"errors"
	"io"
	"strings"

	"golang.org/x/net/html"
	"golang.org/x/net/html/atom"

	gh "github.com/gatehouse/gatehouse"
)

// extractHTML reads an HTML page's text with the x/net/html tokenizer:
// h1–h6 become the heading path, block elements end a paragraph, script,
// style and the like are dropped, and <title> (or the first heading) is
// the title. The text is the paragraphs and heading lines joined by blank
// lines; offsets are into it.
func extractHTML(data []byte) (extracted, error) {
	var x extracted
	var text strings.Builder
	var para strings.Builder
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
	emit := func(s string) (int, int) {
		if text.Len() > 0 {
			text.WriteString("\n\n")
		}
		start := text.Len()
		text.WriteString(s)
		return start, text.Len()
	}
	flush := func() {
		s := strings.TrimSpace(para.String())
		para.Reset()
		if s != "" {
			start, end := emit(s)
			x.blocks = append(x.blocks, block{heading: headingPath(), start: start, end: end})
		}
	}
	skip := 0        // depth inside script, style, …
	heading := 0     // level of the open h1–h6
	pre := 0         // depth inside <pre>
	inTitle := false // inside <title>
	var title strings.Builder
	z := html.NewTokenizer(bytes.NewReader(data))
	for {
		tt := z.Next()
		if tt == html.ErrorToken {
			if err := z.Err(); !errors.Is(err, io.EOF) {
				return x, gh.Wrap(gh.CodeInvalid, ErrBroken, "read HTML: %v", err)
			}
			break
		}
		tok := z.Token()
		switch tt {
		case html.StartTagToken, html.EndTagToken, html.SelfClosingTagToken:
			start := tt != html.EndTagToken
			switch a := tok.DataAtom; {
			case a == atom.Script || a == atom.Style || a == atom.Noscript || a == atom.Template || a == atom.Svg || a == atom.Iframe:
				if tt == html.StartTagToken {
					skip++
				} else if tt == html.EndTagToken && skip > 0 {
					skip--
				}
			case a == atom.Title:
				inTitle = tt == html.StartTagToken
			case headingLevel(a) > 0:
				if start {
					flush()
					heading = headingLevel(a)
				} else if heading > 0 {
					t := strings.Join(strings.Fields(para.String()), " ")
					para.Reset()
					if t != "" {
						for len(path) > 0 && path[len(path)-1].n >= heading {
							path = path[:len(path)-1]
						}
						path = append(path, level{heading, t})
						emit(t)
						if x.title == "" {
							x.title = t
						}
					}
					heading = 0
				}
			case a == atom.Pre:
				flush()
				if tt == html.StartTagToken {
					pre++
				} else if tt == html.EndTagToken && pre > 0 {
					pre--
				}
			case a == atom.Br:
				para.WriteString("\n")
			case blockElement[a]:
				if heading == 0 {
					flush()
				}
			}
		case html.TextToken:
			switch {
			case skip > 0:
			case inTitle:
				title.WriteString(tok.Data)
			case pre > 0:
				para.WriteString(tok.Data)
			default:
				// Runs of whitespace are one space, as a browser shows them.
				s := strings.Join(strings.Fields(tok.Data), " ")
				if s == "" {
					if para.Len() > 0 {
						para.WriteString(" ")
					}
					continue
				}
				if strings.IndexFunc(tok.Data[:1], isSpace) == 0 && para.Len() > 0 {
					para.WriteString(" ")
				}
				para.WriteString(s)
				if strings.LastIndexFunc(tok.Data, isSpace) == len(tok.Data)-1 {
					para.WriteString(" ")
				}
			}
		}
	}
	flush()
	if t := strings.Join(strings.Fields(title.String()), " "); t != "" {
		x.title = t
	}
	x.text = text.String()
	return x, nil
}

func isSpace(r rune) bool { return r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\f' }

func headingLevel(a atom.Atom) int {
	switch a {
	case atom.H1:
		return 1
	case atom.H2:
		return 2
	case atom.H3:
		return 3
	case atom.H4:
		return 4
	case atom.H5:
		return 5
	case atom.H6:
		return 6
	}
	return 0
}

// blockElement ends a paragraph where it opens or closes.
var blockElement = map[atom.Atom]bool{
	atom.P: true, atom.Div: true, atom.Li: true, atom.Ul: true, atom.Ol: true, atom.Blockquote: true, atom.Table: true,
	atom.Tr: true, atom.Td: true, atom.Th: true, atom.Section: true, atom.Article: true, atom.Header: true, atom.Footer: true,
	atom.Hr: true, atom.Dd: true, atom.Dt: true, atom.Dl: true, atom.Figure: true, atom.Figcaption: true, atom.Main: true,
	atom.Nav: true, atom.Aside: true, atom.Form: true, atom.Body: true, atom.Caption: true, atom.Details: true, atom.Summary: true,
}
