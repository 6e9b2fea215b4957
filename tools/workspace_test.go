package tools_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gatehouse/gatehouse/tools/toolstest"

	"github.com/gatehouse/gatehouse/tools"
)

func TestWorkspaceListReadWrite(t *testing.T) {
	ws := t.TempDir()
	if err := os.MkdirAll(filepath.Join(ws, "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(ws, "docs", "report.md"), []byte("# Report\nready\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := tools.WorkspaceConfig{}
	list, read, write := tools.NewWorkspaceList(cfg), tools.NewWorkspaceRead(cfg), tools.NewWorkspaceWrite(cfg)
	if list.Tier() != tools.Safe || read.Tier() != tools.Safe || write.Tier() != tools.Danger {
		t.Fatal("tiers: list and read safe, write danger")
	}

	res := toolstest.Run(t, list, ws, map[string]string{})
	if res.IsError || !res.External || !strings.Contains(res.Content, "docs/") {
		t.Fatalf("list: %+v", res)
	}
	res = toolstest.Run(t, list, ws, map[string]string{"path": "docs"})
	if res.IsError || !strings.Contains(res.Content, "report.md\t15 bytes") {
		t.Fatalf("list docs: %+v", res)
	}
	res = toolstest.Run(t, read, ws, map[string]string{"path": "docs/report.md"})
	if res.IsError || !res.External || res.Content != "# Report\nready\n" {
		t.Fatalf("read: %+v", res)
	}
	res = toolstest.Run(t, read, ws, map[string]string{"path": "docs/./../docs/report.md"})
	if res.IsError {
		t.Fatalf("read of a path that stays inside after cleaning: %+v", res)
	}

	res = toolstest.Run(t, write, ws, map[string]string{"path": "out/new/notes.txt", "content": "hello"})
	if res.IsError || res.External {
		t.Fatalf("write: %+v", res)
	}
	if b, err := os.ReadFile(filepath.Join(ws, "out", "new", "notes.txt")); err != nil || string(b) != "hello" {
		t.Fatalf("written file: %q %v", b, err)
	}
	// Replacing keeps the file's mode and leaves no temporary file behind.
	res = toolstest.Run(t, write, ws, map[string]string{"path": "docs/report.md", "content": "v2"})
	if res.IsError {
		t.Fatalf("overwrite: %+v", res)
	}
	if st, err := os.Stat(filepath.Join(ws, "docs", "report.md")); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("mode after overwrite: %v %v", st.Mode(), err)
	}
	entries, _ := os.ReadDir(filepath.Join(ws, "docs"))
	if len(entries) != 1 {
		t.Errorf("docs holds %d entries after a write, want 1", len(entries))
	}
	if !write.Idempotent() {
		t.Error("a whole-file write is safe to retry")
	}

	if res := toolstest.Run(t, read, ws, map[string]string{"path": "nope.txt"}); !res.IsError || !strings.Contains(res.Content, "does not exist") {
		t.Errorf("read missing: %+v", res)
	}
	if res := toolstest.Run(t, read, ws, map[string]string{"path": "docs"}); !res.IsError {
		t.Errorf("read a directory: %+v", res)
	}
	if res := toolstest.Run(t, write, ws, map[string]string{"path": "docs", "content": "x"}); !res.IsError {
		t.Errorf("write over a directory: %+v", res)
	}
}

func TestWorkspaceReadCap(t *testing.T) {
	ws := t.TempDir()
	os.WriteFile(filepath.Join(ws, "big.txt"), []byte(strings.Repeat("a", 5000)), 0o644)
	os.WriteFile(filepath.Join(ws, "bin"), []byte{0x7f, 'E', 'L', 'F', 0, 1, 2}, 0o644)
	read := tools.NewWorkspaceRead(tools.WorkspaceConfig{MaxReadBytes: 100})
	res := toolstest.Run(t, read, ws, map[string]string{"path": "big.txt"})
	if res.IsError || !strings.HasPrefix(res.Content, strings.Repeat("a", 100)+"\n\n[truncated") {
		t.Fatalf("capped read: %q", res.Content)
	}
	if res := toolstest.Run(t, read, ws, map[string]string{"path": "bin"}); !res.IsError || !strings.Contains(res.Content, "binary") {
		t.Errorf("binary: %+v", res)
	}
}

func TestWorkspaceRefusesEscapes(t *testing.T) {
	parent := t.TempDir()
	ws := filepath.Join(parent, "ws")
	outside := filepath.Join(parent, "outside")
	for _, d := range []string{ws, outside} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	secret := filepath.Join(outside, "secret.txt")
	os.WriteFile(secret, []byte("top secret"), 0o644)
	// Links pointing outside, relative and absolute, to a file and to a directory.
	os.Symlink("../outside/secret.txt", filepath.Join(ws, "rel-link"))
	os.Symlink(secret, filepath.Join(ws, "abs-link"))
	os.Symlink(outside, filepath.Join(ws, "dir-link"))
	// A link that stays inside is fine.
	os.WriteFile(filepath.Join(ws, "inside.txt"), []byte("inside"), 0o644)
	os.Symlink("inside.txt", filepath.Join(ws, "good-link"))

	cfg := tools.WorkspaceConfig{}
	list, read, write := tools.NewWorkspaceList(cfg), tools.NewWorkspaceRead(cfg), tools.NewWorkspaceWrite(cfg)
	for _, p := range []string{"../outside/secret.txt", "..", "a/../../outside/secret.txt", secret, "/etc/passwd", "rel-link", "abs-link", "dir-link/secret.txt"} {
		if res := toolstest.Run(t, read, ws, map[string]string{"path": p}); !res.IsError || strings.Contains(res.Content, "top secret") {
			t.Errorf("read %q: %+v, want refused", p, res)
		} else if !strings.Contains(res.Content, "refused") {
			t.Errorf("read %q: %q should say it was refused", p, res.Content)
		}
		if res := toolstest.Run(t, write, ws, map[string]string{"path": p, "content": "pwned"}); !res.IsError {
			t.Errorf("write %q: %+v, want refused", p, res)
		}
	}
	for _, p := range []string{"..", "../outside", outside, "dir-link"} {
		if res := toolstest.Run(t, list, ws, map[string]string{"path": p}); !res.IsError || strings.Contains(res.Content, "secret.txt") {
			t.Errorf("list %q: %+v, want refused", p, res)
		}
	}
	if res := toolstest.Run(t, write, ws, map[string]string{"path": "dir-link/new.txt", "content": "pwned"}); !res.IsError {
		t.Errorf("write through a directory link: %+v", res)
	}
	if b, _ := os.ReadFile(secret); string(b) != "top secret" {
		t.Fatalf("the file outside was changed: %q", b)
	}
	if _, err := os.Stat(filepath.Join(outside, "new.txt")); err == nil {
		t.Fatal("a file was created outside the workspace")
	}

	if res := toolstest.Run(t, read, ws, map[string]string{"path": "good-link"}); res.IsError || res.Content != "inside" {
		t.Errorf("read through an inside link: %+v", res)
	}
	if res := toolstest.Run(t, write, ws, map[string]string{"path": "good-link", "content": "changed"}); res.IsError {
		t.Errorf("write through an inside link: %+v", res)
	}
	if b, _ := os.ReadFile(filepath.Join(ws, "inside.txt")); string(b) != "changed" {
		t.Errorf("inside.txt = %q, want written through the link", b)
	}

	// No workspace for the turn: refused, not the process's directory.
	if res := toolstest.Run(t, list, "", map[string]string{}); !res.IsError {
		t.Errorf("list without a workspace: %+v", res)
	}
}
