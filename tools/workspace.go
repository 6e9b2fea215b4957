package tools

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"unicode/utf8"
)

// Names of the workspace tools.
const (
	NameWorkspaceList  = "workspace_list"
	NameWorkspaceRead  = "workspace_read"
	NameWorkspaceWrite = "workspace_write"
)

// WorkspaceConfig configures workspace_list, workspace_read and workspace_write.
//
// Paths are relative to the turn's workspace (Call.Workspace). Every access
// goes through an os.Root opened on the workspace, so a path that leaves it
// — "..", an absolute path, or a symbolic link pointing outside — is refused
// by the kernel-level lookup, not by string matching alone.
type WorkspaceConfig struct {
	// MaxReadBytes caps what workspace_read returns; a longer file is cut and
	// the result says so. Defaults to 256 KiB.
	MaxReadBytes int64
	// MaxWriteBytes caps the content workspace_write accepts. Defaults to 1 MiB.
	MaxWriteBytes int
	// MaxListEntries caps the entries workspace_list returns. Defaults to 1000.
	MaxListEntries int
}

func (c WorkspaceConfig) withDefaults() WorkspaceConfig {
	if c.MaxReadBytes <= 0 {
		c.MaxReadBytes = 256 << 10
	}
	if c.MaxWriteBytes <= 0 {
		c.MaxWriteBytes = 1 << 20
	}
	if c.MaxListEntries <= 0 {
		c.MaxListEntries = 1000
	}
	return c
}

// WorkspaceTools returns workspace_list, workspace_read and workspace_write.
func WorkspaceTools(cfg WorkspaceConfig) []Tool {
	return []Tool{NewWorkspaceList(cfg), NewWorkspaceRead(cfg), NewWorkspaceWrite(cfg)}
}

// openWorkspace opens the turn's workspace as a root and checks rel, the
// path the model gave. It returns the root, the cleaned relative path, and a
// message for the model when the path is refused.
func openWorkspace(tool string, call Call, rel string) (*os.Root, string, *Result) {
	if call.Workspace == "" || !filepath.IsAbs(call.Workspace) {
		r := ErrorResult("%s: this turn has no workspace directory", tool)
		return nil, "", &r
	}
	clean, msg := cleanRelative(rel)
	if msg != "" {
		r := ErrorResult("%s: refused: %s", tool, msg)
		return nil, "", &r
	}
	root, err := os.OpenRoot(call.Workspace)
	if err != nil {
		r := ErrorResult("%s: cannot open the workspace: %v", tool, err)
		return nil, "", &r
	}
	return root, clean, nil
}

// cleanRelative checks a path given by the model: relative, using slashes,
// and not leaving the workspace after cleaning. Symbolic links are checked
// by os.Root when the path is used.
func cleanRelative(p string) (string, string) {
	p = strings.TrimSpace(p)
	if p == "" {
		return ".", ""
	}
	if strings.ContainsRune(p, 0) {
		return "", fmt.Sprintf("%q contains a NUL byte", p)
	}
	if path.IsAbs(p) || filepath.IsAbs(p) || filepath.VolumeName(p) != "" || strings.HasPrefix(p, `\`) {
		return "", fmt.Sprintf("%q is an absolute path; give a path relative to the workspace", p)
	}
	c := path.Clean(filepath.ToSlash(p))
	if c == ".." || strings.HasPrefix(c, "../") {
		return "", fmt.Sprintf("%q leaves the workspace", p)
	}
	return filepath.FromSlash(c), ""
}

// describePathError turns an os.Root error into a message for the model.
func describePathError(tool, rel string, err error) Result {
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return ErrorResult("%s: %q does not exist in the workspace", tool, rel)
	case errors.Is(err, fs.ErrPermission):
		return ErrorResult("%s: %q: permission denied", tool, rel)
	case isEscapeError(err):
		return ErrorResult("%s: refused: %q leads outside the workspace (through a symbolic link or ..)", tool, rel)
	}
	return ErrorResult("%s: %q: %v", tool, rel, err)
}

func isEscapeError(err error) bool {
	// os.Root reports an escape as a *PathError wrapping an unexported
	// error whose text is "path escapes from parent".
	return err != nil && strings.Contains(err.Error(), "path escapes from parent")
}

// openNonblock is added to every open of a workspace path. On Unix,
// opening a FIFO blocks until the other end is opened (for reading, until a
// writer comes; for writing, until a reader comes), which would hang the
// turn in a system call no context can interrupt. With O_NONBLOCK the open
// returns at once — a FIFO for writing with no reader fails with ENXIO — so
// the tool can fstat what it opened and refuse it. Windows has no FIFOs in
// the file system (its named pipes live under \\.\pipe\) and its
// O_NONBLOCK asks for overlapped I/O, so it is left out there. O_NONBLOCK
// changes nothing for regular files and directories.
var openNonblock = func() int {
	if runtime.GOOS == "windows" {
		return 0
	}
	return syscall.O_NONBLOCK
}()

// Modes of what workspace_write creates: only the gateway's user may read
// the files an agent writes (they may hold anything from the conversation).
// A replaced file keeps its own mode.
const (
	workspaceFileMode fs.FileMode = 0o600
	workspaceDirMode  fs.FileMode = 0o700
)

// readChunk is how much workspace_read reads between two checks of the
// context, so a cancelled turn stops reading promptly.
const readChunk = 32 << 10

// fileKind names the type of a file for a message.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsRegular():
		return "regular file"
	case m.IsDir():
		return "directory"
	case m&fs.ModeSymlink != 0:
		return "symbolic link"
	case m&fs.ModeNamedPipe != 0:
		return "named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeCharDevice != 0: // before ModeDevice: a character device has both bits
		return "character device"
	case m&fs.ModeDevice != 0:
		return "block device"
	}
	return "special file"
}

// refuseKind is the answer for a path that is neither a regular file nor a
// directory: reading or writing one could block forever (a FIFO) or act
// on hardware (a device), so the workspace tools never do.
func refuseKind(tool, rel string, m fs.FileMode, want string) Result {
	return ErrorResult("%s: refused: %q is a %s, not a %s; the workspace tools only handle regular files and directories", tool, rel, fileKind(m), want)
}

// isSpecialOpenError reports an open that failed because of what the path
// is rather than where it is: ENXIO is a FIFO opened for writing with no
// reader, or a socket (Linux); BSDs answer EOPNOTSUPP for a socket.
func isSpecialOpenError(err error) bool {
	return errors.Is(err, syscall.ENXIO) || errors.Is(err, syscall.EOPNOTSUPP)
}

// describeOpenError is describePathError for an open: when the open failed
// because of the file's type, the answer names the type.
func describeOpenError(root *os.Root, tool, clean, rel, want string, err error) Result {
	if isSpecialOpenError(err) {
		if st, serr := root.Stat(clean); serr == nil && !st.Mode().IsRegular() && !st.IsDir() {
			return refuseKind(tool, rel, st.Mode(), want)
		}
		return ErrorResult("%s: refused: %q is not a regular file (a named pipe, socket or device); the workspace tools only handle regular files and directories", tool, rel)
	}
	return describePathError(tool, rel, err)
}

// openNoWait opens clean in root without blocking, whatever it is, and
// returns what fstat says of the opened file: the caller checks the type of
// what it actually holds, not of what the path named a moment before.
func openNoWait(root *os.Root, clean string, flag int) (*os.File, fs.FileInfo, error) {
	f, err := root.OpenFile(clean, flag|openNonblock, 0)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, st, nil
}

func pathArg(raw json.RawMessage) (string, error) {
	var a struct {
		Path string `json:"path"`
	}
	if len(raw) == 0 {
		return "", nil
	}
	err := json.Unmarshal(raw, &a)
	return a.Path, err
}

// WorkspaceList is the workspace_list tool.
type WorkspaceList struct{ cfg WorkspaceConfig }

// NewWorkspaceList returns workspace_list with cfg.
func NewWorkspaceList(cfg WorkspaceConfig) *WorkspaceList {
	return &WorkspaceList{cfg: cfg.withDefaults()}
}

// Name implements Tool.
func (t *WorkspaceList) Name() string { return NameWorkspaceList }

// Description implements Tool.
func (t *WorkspaceList) Description() string {
	return "List a directory of the workspace. Directories end with /, files show their size; pipes, sockets and devices show their type and cannot be read."
}

// Schema implements Tool.
func (t *WorkspaceList) Schema() json.RawMessage {
	return json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "Directory relative to the workspace. Defaults to the workspace itself."}
  },
  "additionalProperties": false
}`)
}

// Tier implements Tool.
func (t *WorkspaceList) Tier() Tier { return Safe }

// Runnable implements Tool.
func (t *WorkspaceList) Runnable() error { return nil }

// Idempotent implements Tool: listing has no effect.
func (t *WorkspaceList) Idempotent() bool { return true }

// Run implements Tool. File names are text from outside (anyone who wrote
// into the workspace chose them), so the result is External.
func (t *WorkspaceList) Run(ctx context.Context, call Call) (Result, error) {
	rel, err := pathArg(call.Arguments)
	if err != nil {
		return ErrorResult("workspace_list: bad arguments: %v", err), nil
	}
	root, clean, refused := openWorkspace(NameWorkspaceList, call, rel)
	if refused != nil {
		return *refused, nil
	}
	defer root.Close()
	if err := ctx.Err(); err != nil {
		return ErrorResult("workspace_list: stopped: %v", err), err
	}
	// Stat before opening, so a FIFO or a device is not even opened.
	st, err := root.Stat(clean)
	if err != nil {
		return describePathError(NameWorkspaceList, rel, err), nil
	}
	if st.Mode().IsRegular() {
		return ErrorResult("workspace_list: %q is a file, not a directory; use workspace_read", rel), nil
	}
	if !st.IsDir() {
		return refuseKind(NameWorkspaceList, rel, st.Mode(), "directory"), nil
	}
	dir, st, err := openNoWait(root, clean, os.O_RDONLY)
	if err != nil {
		return describeOpenError(root, NameWorkspaceList, clean, rel, "directory", err), nil
	}
	defer dir.Close()
	if !st.IsDir() { // replaced between the stat and the open
		return refuseKind(NameWorkspaceList, rel, st.Mode(), "directory"), nil
	}
	// Read in batches so a huge directory still lets a cancelled turn go.
	var entries []fs.DirEntry
	for {
		if err := ctx.Err(); err != nil {
			return ErrorResult("workspace_list: stopped: %v", err), err
		}
		batch, err := dir.ReadDir(1024)
		entries = append(entries, batch...)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return describePathError(NameWorkspaceList, rel, err), nil
		}
	}
	slices.SortFunc(entries, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	var b strings.Builder
	shown := entries
	if len(shown) > t.cfg.MaxListEntries {
		shown = shown[:t.cfg.MaxListEntries]
	}
	for _, e := range shown {
		switch {
		case e.IsDir():
			fmt.Fprintf(&b, "%s/\n", e.Name())
		case e.Type()&fs.ModeSymlink != 0:
			fmt.Fprintf(&b, "%s@ (symbolic link)\n", e.Name())
		case !e.Type().IsRegular():
			// A FIFO, socket or device: shown with its type so the model
			// knows it is there and why reading it will be refused.
			fmt.Fprintf(&b, "%s\t(%s; not readable)\n", e.Name(), fileKind(e.Type()))
		default:
			if info, err := e.Info(); err == nil {
				fmt.Fprintf(&b, "%s\t%d bytes\n", e.Name(), info.Size())
			} else {
				fmt.Fprintf(&b, "%s\n", e.Name())
			}
		}
	}
	if len(entries) == 0 {
		b.WriteString("(empty directory)\n")
	}
	if n := len(entries) - len(shown); n > 0 {
		fmt.Fprintf(&b, "[%d more entries not shown]\n", n)
	}
	return Result{Content: b.String(), External: true}, nil
}

// WorkspaceRead is the workspace_read tool.
type WorkspaceRead struct{ cfg WorkspaceConfig }

// NewWorkspaceRead returns workspace_read with cfg.
func NewWorkspaceRead(cfg WorkspaceConfig) *WorkspaceRead {
	return &WorkspaceRead{cfg: cfg.withDefaults()}
}

// Name implements Tool.
func (t *WorkspaceRead) Name() string { return NameWorkspaceRead }

// Description implements Tool.
func (t *WorkspaceRead) Description() string {
	return fmt.Sprintf("Read a text file of the workspace (at most %d bytes are returned).", t.cfg.MaxReadBytes)
}

// Schema implements Tool.
func (t *WorkspaceRead) Schema() json.RawMessage {
	return json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "File path relative to the workspace."}
  },
  "required": ["path"],
  "additionalProperties": false
}`)
}

// Tier implements Tool.
func (t *WorkspaceRead) Tier() Tier { return Safe }

// Runnable implements Tool.
func (t *WorkspaceRead) Runnable() error { return nil }

// Idempotent implements Tool: reading has no effect.
func (t *WorkspaceRead) Idempotent() bool { return true }

// Run implements Tool.
func (t *WorkspaceRead) Run(ctx context.Context, call Call) (Result, error) {
	rel, err := pathArg(call.Arguments)
	if err != nil {
		return ErrorResult("workspace_read: bad arguments: %v", err), nil
	}
	root, clean, refused := openWorkspace(NameWorkspaceRead, call, rel)
	if refused != nil {
		return *refused, nil
	}
	defer root.Close()
	if err := ctx.Err(); err != nil {
		return ErrorResult("workspace_read: stopped: %v", err), err
	}
	// Stat before opening, so a FIFO or a device is not even opened; the
	// fstat after the open catches a path swapped in between.
	st, err := root.Stat(clean)
	if err != nil {
		return describePathError(NameWorkspaceRead, rel, err), nil
	}
	if st.IsDir() {
		return ErrorResult("workspace_read: %q is a directory; use workspace_list", rel), nil
	}
	if !st.Mode().IsRegular() {
		return refuseKind(NameWorkspaceRead, rel, st.Mode(), "regular file"), nil
	}
	f, st, err := openNoWait(root, clean, os.O_RDONLY)
	if err != nil {
		return describeOpenError(root, NameWorkspaceRead, clean, rel, "regular file", err), nil
	}
	defer f.Close()
	if st.IsDir() {
		return ErrorResult("workspace_read: %q is a directory; use workspace_list", rel), nil
	}
	if !st.Mode().IsRegular() {
		return refuseKind(NameWorkspaceRead, rel, st.Mode(), "regular file"), nil
	}
	data, err := readLimited(ctx, f, t.cfg.MaxReadBytes+1)
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ErrorResult("workspace_read: stopped: %v", ctxErr), ctxErr
	}
	if err != nil {
		return describePathError(NameWorkspaceRead, rel, err), nil
	}
	truncated := int64(len(data)) > t.cfg.MaxReadBytes
	if truncated {
		data = data[:t.cfg.MaxReadBytes]
		for i := 0; i < utf8.UTFMax-1 && len(data) > 0; i++ {
			if r, size := utf8.DecodeLastRune(data); r != utf8.RuneError || size != 1 {
				break
			}
			data = data[:len(data)-1]
		}
	}
	if slices.Contains(data[:min(len(data), 8000)], 0) {
		return ErrorResult("workspace_read: %q looks like a binary file (%d bytes); only text files can be read", rel, st.Size()), nil
	}
	content := strings.ToValidUTF8(string(data), "\uFFFD")
	if truncated {
		content += fmt.Sprintf("\n\n[truncated: the file has %d bytes; only the first %d are shown]", st.Size(), t.cfg.MaxReadBytes)
	}
	return Result{Content: content, External: true}, nil
}

// readLimited reads up to limit bytes of f in chunks, checking ctx between
// them, so a cancelled turn does not wait for the whole read.
func readLimited(ctx context.Context, f io.Reader, limit int64) ([]byte, error) {
	var data []byte
	buf := make([]byte, min(int64(readChunk), limit))
	for int64(len(data)) < limit {
		if err := ctx.Err(); err != nil {
			return data, err
		}
		n, err := f.Read(buf[:min(int64(len(buf)), limit-int64(len(data)))])
		data = append(data, buf[:n]...)
		if errors.Is(err, io.EOF) {
			return data, nil
		}
		if err != nil {
			return data, err
		}
	}
	return data, nil
}

// WorkspaceWrite is the workspace_write tool.
type WorkspaceWrite struct{ cfg WorkspaceConfig }

// NewWorkspaceWrite returns workspace_write with cfg.
func NewWorkspaceWrite(cfg WorkspaceConfig) *WorkspaceWrite {
	return &WorkspaceWrite{cfg: cfg.withDefaults()}
}

// Name implements Tool.
func (t *WorkspaceWrite) Name() string { return NameWorkspaceWrite }

// Description implements Tool.
func (t *WorkspaceWrite) Description() string {
	return "Write a text file in the workspace, replacing it if it exists; missing directories are created. A person approves each write."
}

// Schema implements Tool.
func (t *WorkspaceWrite) Schema() json.RawMessage {
	return json.RawMessage(`{
  "type": "object",
  "properties": {
    "path": {"type": "string", "description": "File path relative to the workspace."},
    "content": {"type": "string", "description": "The whole new content of the file."}
  },
  "required": ["path", "content"],
  "additionalProperties": false
}`)
}

// Tier implements Tool: it changes files.
func (t *WorkspaceWrite) Tier() Tier { return Danger }

// Runnable implements Tool.
func (t *WorkspaceWrite) Runnable() error { return nil }

// Idempotent implements Tool. A write replaces the whole file with the given
// content (through a temporary file and a rename, so a crash leaves the old
// file or the new one, never half of it): running the same call again
// leaves the same file, so a retry cannot act twice.
func (t *WorkspaceWrite) Idempotent() bool { return true }

// Run implements Tool.
func (t *WorkspaceWrite) Run(ctx context.Context, call Call) (Result, error) {
	var a struct {
		Path    string `json:"path"`
		Content string `json:"content"`
	}
	if err := json.Unmarshal(call.Arguments, &a); err != nil {
		return ErrorResult("workspace_write: bad arguments: %v", err), nil
	}
	if len(a.Content) > t.cfg.MaxWriteBytes {
		return ErrorResult("workspace_write: not written: the content has %d bytes, more than the limit of %d", len(a.Content), t.cfg.MaxWriteBytes), nil
	}
	root, clean, refused := openWorkspace(NameWorkspaceWrite, call, a.Path)
	if refused != nil {
		return *refused, nil
	}
	defer root.Close()
	if clean == "." {
		return ErrorResult("workspace_write: give a file path, not the workspace itself"), nil
	}
	if err := ctx.Err(); err != nil {
		return ErrorResult("workspace_write: not written: %v", err), err
	}
	if dir := filepath.Dir(clean); dir != "." {
		// The umask can only take bits away from 0700, never add any.
		if err := root.MkdirAll(dir, workspaceDirMode); err != nil {
			return describePathError(NameWorkspaceWrite, a.Path, err), nil
		}
	}
	perm := workspaceFileMode
	if st, err := root.Lstat(clean); err == nil {
		switch {
		case st.IsDir():
			return ErrorResult("workspace_write: %q is a directory", a.Path), nil
		case st.Mode()&fs.ModeSymlink != 0:
			// Write through a link that stays inside the workspace (os.Root
			// refuses one that leaves it) rather than replace the link.
			return t.writeInPlace(ctx, root, clean, a.Path, a.Content)
		case !st.Mode().IsRegular():
			// Not replaced either: a FIFO or a device someone put there is
			// left alone, and the model is told what it is.
			return refuseKind(NameWorkspaceWrite, a.Path, st.Mode(), "regular file"), nil
		}
		perm = st.Mode().Perm()
	} else if !errors.Is(err, fs.ErrNotExist) {
		return describePathError(NameWorkspaceWrite, a.Path, err), nil
	}

	var rnd [6]byte
	_, _ = rand.Read(rnd[:])
	tmp := filepath.Join(filepath.Dir(clean), ".gatehouse-write-"+hex.EncodeToString(rnd[:]))
	// O_EXCL: a new regular file, never something already there.
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|openNonblock, perm)
	if err != nil {
		return describePathError(NameWorkspaceWrite, a.Path, err), nil
	}
	// The umask may have taken bits off perm: set it exactly, so a new file
	// is 0600 and a replaced one keeps the mode it had.
	werr := f.Chmod(perm)
	if werr == nil {
		_, werr = io.WriteString(f, a.Content)
	}
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr == nil {
		// Last moment to stop with nothing changed: after the rename the
		// write has happened.
		if err := ctx.Err(); err != nil {
			_ = root.Remove(tmp)
			return ErrorResult("workspace_write: not written: %v", err), err
		}
		werr = root.Rename(tmp, clean)
	}
	if werr != nil {
		_ = root.Remove(tmp)
		return describePathError(NameWorkspaceWrite, a.Path, werr), nil
	}
	return Result{Content: fmt.Sprintf("wrote %d bytes to %s", len(a.Content), filepath.ToSlash(clean))}, nil
}

// writeInPlace writes through a symbolic link that stays in the workspace.
// It opens without O_TRUNC and checks what it opened before truncating, so
// a link to a FIFO or a device is refused with that file untouched.
func (t *WorkspaceWrite) writeInPlace(ctx context.Context, root *os.Root, clean, rel, content string) (Result, error) {
	// What the link points at, before opening it: a device is not even
	// opened. The fstat below catches a target swapped in between.
	if st, err := root.Stat(clean); err == nil && !st.Mode().IsRegular() && !st.IsDir() {
		return refuseKind(NameWorkspaceWrite, rel, st.Mode(), "regular file"), nil
	}
	f, st, err := openNoWait(root, clean, os.O_WRONLY)
	if err != nil {
		return describeOpenError(root, NameWorkspaceWrite, clean, rel, "regular file", err), nil
	}
	if st.IsDir() {
		f.Close()
		return ErrorResult("workspace_write: %q is a directory", rel), nil
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return refuseKind(NameWorkspaceWrite, rel, st.Mode(), "regular file"), nil
	}
	if err := ctx.Err(); err != nil {
		f.Close()
		return ErrorResult("workspace_write: not written: %v", err), err
	}
	werr := f.Truncate(0)
	if werr == nil {
		_, werr = io.WriteString(f, content)
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return describePathError(NameWorkspaceWrite, rel, werr), nil
	}
	return Result{Content: fmt.Sprintf("wrote %d bytes to %s", len(content), filepath.ToSlash(clean))}, nil
}
