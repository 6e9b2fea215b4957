package webfetch

import (
	"html"
	"regexp"
	"strings"
)

// htmlToText turns HTML into readable text, crudely: scripts, styles and
// comments go, block elements become line breaks, links keep their target,
// other tags are dropped and entities decoded. It is for a model to read,
// not a renderer.
func htmlToText(s string) string {
	title := ""
	if m := reTitle.FindStringSubmatch(s); m != nil {
		title = strings.Join(strings.Fields(html.UnescapeString(reTag.ReplaceAllString(m[1], " "))), " ")
	}
	s = reDropBlocks.ReplaceAllString(s, " ")
	s = reComment.ReplaceAllString(s, " ")
	s = reLink.ReplaceAllStringFunc(s, func(m string) string {
		sub := reLink.FindStringSubmatch(m)
		href := strings.TrimSpace(html.UnescapeString(sub[1] + sub[2] + sub[3]))
		text := strings.TrimSpace(reTag.ReplaceAllString(sub[4], " "))
		if href == "" || strings.HasPrefix(href, "#") || strings.HasPrefix(strings.ToLower(href), "javascript:") {
			return " " + text + " "
		}
		if text == "" {
			return " (" + href + ") "
		}
		return " " + text + " (" + href + ") "
	})
	s = reListItem.ReplaceAllString(s, "\n- ")
	s = reBlock.ReplaceAllString(s, "\n")
	s = reTag.ReplaceAllString(s, " ")
	s = html.UnescapeString(s)
	s = strings.ReplaceAll(s, "\u00a0", " ")

	lines := strings.Split(s, "\n")
	out := make([]string, 0, len(lines))
	blank := false
	for _, l := range lines {
		l = strings.Join(strings.Fields(l), " ")
		if l == "" {
			if !blank && len(out) > 0 {
				out = append(out, "")
			}
			blank = true
			continue
		}
		blank = false
		out = append(out, l)
	}
	text := strings.TrimSpace(strings.Join(out, "\n"))
	if title != "" && !strings.HasPrefix(text, title) {
		text = "Title: " + title + "\n\n" + text
	}
	return text
}

var (
	reDropBlocks = regexp.MustCompile(`(?is)<(script|style|noscript|template|svg|head)\b[^>]*>.*?</(script|style|noscript|template|svg|head)\s*>`)
	reComment    = regexp.MustCompile(`(?s)<!--.*?-->`)
	reTitle      = regexp.MustCompile(`(?is)<title\b[^>]*>(.*?)</title\s*>`)
	reLink       = regexp.MustCompile(`(?is)<a\b[^>]*?\bhref\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>"']+))[^>]*>(.*?)</a\s*>`)
	reListItem   = regexp.MustCompile(`(?i)<li\b[^>]*>`)
	reBlock      = regexp.MustCompile(`(?i)</?(p|div|br|hr|h[1-6]|ul|ol|li|tr|table|section|article|header|footer|nav|main|aside|blockquote|pre|dl|dt|dd|form|title|figure|figcaption)\b[^>]*>`)
	reTag        = regexp.MustCompile(`(?s)<[^>]*>`)
)
