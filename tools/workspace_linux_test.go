package tools_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/gatehouse/gatehouse/tools"
)

// A device node in the workspace (here the twin of /dev/null, 1:3) is
// refused by name, left in place, and listed with its type. Making one
// needs root (CAP_MKNOD); elsewhere the test skips.
func TestWorkspaceRefusesDevice(t *testing.T) {
	ws := t.TempDir()
	dev := filepath.Join(ws, "null")
	if err := syscall.Mknod(dev, syscall.S_IFCHR|0o600, 1<<8|3); err != nil {
		t.Skipf("mknod needs CAP_MKNOD: %v", err)
	}
	ctx := context.Background()
	cfg := tools.WorkspaceConfig{}
	list, read, write := tools.NewWorkspaceList(cfg), tools.NewWorkspaceRead(cfg), tools.NewWorkspaceWrite(cfg)

	if res, err := runPromptly(t, ctx, read, ws, map[string]string{"path": "null"}); err != nil || !res.IsError || !strings.Contains(res.Content, "character device") {
		t.Errorf("read: %+v %v, want a refusal naming the character device", res, err)
	}
	if res, err := runPromptly(t, ctx, write, ws, map[string]string{"path": "null", "content": "x"}); err != nil || !res.IsError || !strings.Contains(res.Content, "character device") {
		t.Errorf("write: %+v %v, want a refusal naming the character device", res, err)
	}
	if st, err := os.Lstat(dev); err != nil || st.Mode()&fs.ModeCharDevice == 0 {
		t.Errorf("after the write, null is %v %v; want the device left alone", st.Mode(), err)
	}
	if res, err := runPromptly(t, ctx, list, ws, map[string]string{}); err != nil || res.IsError || !strings.Contains(res.Content, "null\t(character device") {
		t.Errorf("list: %+v %v, want the device shown with its type", res, err)
	}
}
