// Package webfetch owns the web_fetch tool: a Safe tool that fetches one
// http or https URL and answers its text (HTML turned into readable text by
// htmltext.go), marked External so the caller fences it. Because it runs
// without a person's approval, its default client connects only to public
// addresses: special-use names and numeric host forms are refused before
// any lookup, and every address dialled, redirects included, is checked
// against the non-public ranges (webfetch.go; see WebFetchConfig).
package webfetch
