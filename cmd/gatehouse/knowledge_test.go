package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The binary wires the knowledge library: a file in GATEHOUSE_KNOWLEDGE_DIR
// is indexed into the shared collection and listed by GET /v1/documents, a
// binary file under a text name is listed among the refused, the floors
// and limits from the settings are in force (POST /v1/knowledge/recall),
// and an upload over GATEHOUSE_KNOWLEDGE_MAX_DOCUMENT_BYTES is refused.
func TestKnowledgeWired(t *testing.T) {
	dir := t.TempDir()
	doc := "# Office\n\n## Plants\n\nThe office plants are watered on Fridays by Dana.\n"
	if err := os.WriteFile(filepath.Join(dir, "office.md"), []byte(doc), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "photo.md"), []byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := start(t, "GATEHOUSE_KNOWLEDGE_DIR="+dir, "GATEHOUSE_KNOWLEDGE_SCAN_INTERVAL=200ms",
		"GATEHOUSE_KNOWLEDGE_MAX_DOCUMENT_BYTES=4096", "GATEHOUSE_KNOWLEDGE_MAX_PASSAGES=3", "GATEHOUSE_KNOWLEDGE_LEXICAL_FLOOR=-1")
	base := "http://" + p.addr
	var list struct {
		Documents []struct {
			Name, Source string
			Passages     int
		}
		Failures []struct{ Name, Error string }
	}
	waitUntil(t, "the folder's files indexed and refused", func() bool {
		res, err := http.Get(base + "/v1/documents?collection=shared")
		if err != nil {
			return false
		}
		defer res.Body.Close()
		list.Documents, list.Failures = nil, nil
		_ = json.NewDecoder(res.Body).Decode(&list)
		return len(list.Documents) == 1 && len(list.Failures) == 1
	})
	if d := list.Documents[0]; d.Name != "office.md" || d.Source != "folder" || d.Passages != 1 ||
		list.Failures[0].Name != "photo.md" || !strings.Contains(list.Failures[0].Error, "binary") {
		t.Fatalf("listing: %+v", list)
	}
	body, _ := json.Marshal(map[string]string{"question": "Who waters the office plants?"})
	res, err := http.Post(base+"/v1/knowledge/recall", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var rc struct {
		Passages     []json.RawMessage
		LexicalFloor float64
		MaxPassages  int
	}
	_ = json.NewDecoder(res.Body).Decode(&rc)
	res.Body.Close()
	if len(rc.Passages) != 1 || rc.LexicalFloor != -1 || rc.MaxPassages != 3 {
		t.Fatalf("recall: %+v", rc)
	}
	body, _ = json.Marshal(map[string]string{"name": "big.md", "content": strings.Repeat("word ", 1000)})
	res, err = http.Post(base+"/v1/documents", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusRequestEntityTooLarge {
		t.Fatalf("an upload over the bound: %d", res.StatusCode)
	}
}
