package session

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/loomctx/loom/internal/atomicfile"
	"github.com/loomctx/loom/internal/filelock"
	"github.com/loomctx/loom/messages"
	"github.com/loomctx/loom/workspace"
)

// Dir holds session files, relative to the workspace folder.
const Dir = ".loom/sessions"

// FileStore keeps each session as a JSONL file under one folder: a
// metadata record on the first line, then one message per line. nanobot
// reads and writes the same format; a nanobot session folder works as a
// FileStore folder.
//
// An append is one O_APPEND write under the session's lock; moving the
// pointer and trimming rewrite the file under the lock, atomically, from
// what is on disk then.
type FileStore struct {
	dir  string
	ws   *workspace.Workspace // set: dir is relative to it, and I/O goes through its door
	opts FileOptions
	now  func() time.Time
	made atomic.Bool // the folder has been made through ws's door
}

// FileOptions tune a FileStore. Zero fields take the defaults.
type FileOptions struct {
	// LockWait bounds the wait for another writer of the same session;
	// default filelock.DefaultWait.
	LockWait time.Duration
	// History bounds what a load reads.
	History messages.HistoryOptions
	// Now stamps new sessions; default time.Now.
	Now func() time.Time
}

// NewFileStore returns a store of session files under dir.
func NewFileStore(dir string, opts FileOptions) *FileStore {
	now := opts.Now
	if now == nil {
		now = time.Now
	}
	return &FileStore{dir: dir, opts: opts, now: now}
}

// NewWorkspaceFileStore returns a store of session files in ws's
// .loom/sessions folder ([Dir]), read and written through the workspace's
// door: no symlink is followed, the folder is created 0700 and each file
// 0600.
func NewWorkspaceFileStore(ws *workspace.Workspace, opts FileOptions) *FileStore {
	s := NewFileStore(Dir, opts)
	s.ws = ws
	return s
}

var unsafeKey = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`[^A-Za-z0-9._-]`) })

// FileName is the file name of a session key: every character other than
// letters, digits, '.', '_' and '-' becomes '_' (a nanobot key "cli:ana"
// gives the nanobot file name cli_ana.jsonl).
func FileName(key string) string {
	name := unsafeKey().ReplaceAllString(key, "_")
	if strings.Trim(name, ".") == "" {
		name = strings.ReplaceAll(name, ".", "_")
	}
	return name + ".jsonl"
}

// Path is the file of session key.
func (s *FileStore) Path(key string) string {
	if s.ws != nil {
		return s.ws.Abs(path.Join(s.dir, FileName(key)))
	}
	return filepath.Join(s.dir, FileName(key))
}

func (s *FileStore) file(key string) *File {
	f := &File{Path: s.Path(key), Key: key, LockWait: s.opts.LockWait, History: s.opts.History, Now: s.now}
	if s.ws != nil {
		f.ws, f.rel, f.made = s.ws, path.Join(s.dir, FileName(key)), &s.made
	}
	return f
}

// Load implements Store.
func (s *FileStore) Load(ctx context.Context, key string) (*State, error) {
	return s.file(key).Load(ctx)
}

// AppendTurn implements [TurnAppender].
func (s *FileStore) AppendTurn(ctx context.Context, key, id string, msgs ...messages.Message) (bool, error) {
	return s.file(key).AppendTurn(ctx, id, msgs...)
}

// Append implements Store.
func (s *FileStore) Append(ctx context.Context, key string, msgs ...messages.Message) error {
	return s.file(key).Append(ctx, msgs...)
}

// MoveConsolidated implements Store.
func (s *FileStore) MoveConsolidated(ctx context.Context, key string, from, to int) error {
	return s.file(key).MoveConsolidated(ctx, from, to)
}

// Pointer implements [PointerReader]: it reads the file's metadata
// record only. No lock is taken: the record is replaced atomically and
// appends never touch it.
func (s *FileStore) Pointer(ctx context.Context, key string) (int, error) {
	return s.file(key).Pointer(ctx)
}

// Trim implements Store.
func (s *FileStore) Trim(ctx context.Context, key string, n int) error {
	return s.file(key).Trim(ctx, n)
}

// Close implements Store; a FileStore holds nothing open.
func (s *FileStore) Close() error { return nil }

// File is one session file, addressed by path: what `loom memory
// consolidate --history FILE` works on. Its methods take the file's lock
// (Path plus ".lock") for every read and write.
type File struct {
	Path string
	// Key names the session in a new file's metadata record; default the
	// file name without .jsonl.
	Key      string
	LockWait time.Duration
	History  messages.HistoryOptions
	Now      func() time.Time

	// Set by a workspace FileStore: every open goes through ws's door,
	// at rel.
	ws  *workspace.Workspace
	rel string
	// made, when set, is shared by the store's files: once the folder
	// has been made, a lock does not make it again (two walks through the
	// door per save) unless it has gone.
	made *atomic.Bool
}

// lock takes the session's lock. The folder is made first; that is also
// what Append, MoveConsolidated and Trim rely on for the file itself.
func (f *File) lock(ctx context.Context) (*filelock.Lock, error) {
	if f.ws == nil {
		return filelock.Acquire(ctx, filelock.For(f.Path), f.LockWait)
	}
	// The lock file sits beside the session: its folder is made through
	// the door (never by the lock's own MkdirAll), and a symlink in its
	// place is refused.
	for retry := false; ; retry = true {
		if f.made == nil || !f.made.Load() {
			if err := f.mkdir(); err != nil {
				return nil, err
			}
			if f.made != nil {
				f.made.Store(true)
			}
		}
		p, err := f.ws.LocalPath(f.rel + ".lock")
		if err != nil {
			return nil, err
		}
		l, err := filelock.AcquireExisting(ctx, p, f.LockWait)
		if err != nil && errors.Is(err, fs.ErrNotExist) && !retry && f.made != nil {
			f.made.Store(false) // the folder went: make it again
			continue
		}
		return l, err
	}
}

// mkdir makes the file's folder, private.
func (f *File) mkdir() error {
	if f.ws != nil {
		return f.ws.MkdirAll(path.Dir(f.rel), 0o700)
	}
	return os.MkdirAll(filepath.Dir(f.Path), 0o700)
}

// open opens the file, through the door when there is one.
func (f *File) open(flag int, perm fs.FileMode) (*os.File, error) {
	if f.ws != nil {
		return f.ws.OpenFile(f.rel, flag, perm)
	}
	return os.OpenFile(f.Path, flag|openFlags, perm)
}

// replace writes the whole file atomically, private.
func (f *File) replace(data []byte) error {
	if f.ws != nil {
		return f.ws.WriteFileLimit(f.rel, data, 0o600, 0)
	}
	return atomicfile.WriteFile(f.Path, data, 0o600)
}

func (f *File) now() time.Time {
	if f.Now != nil {
		return f.Now()
	}
	return time.Now()
}

func (f *File) key() string {
	if f.Key != "" {
		return f.Key
	}
	return strings.TrimSuffix(filepath.Base(f.Path), ".jsonl")
}

// Load reads the file under its lock. A missing file is an empty session.
func (f *File) Load(ctx context.Context) (*State, error) {
	l, err := f.lock(ctx)
	if err != nil {
		return nil, err
	}
	defer l.Release()
	st, _, err := f.read()
	return st, err
}

// Pointer reads the consolidation pointer from the metadata record,
// or from the whole file when that record cannot be read alone.
func (f *File) Pointer(ctx context.Context) (int, error) {
	file, err := f.open(os.O_RDONLY, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	meta, err := messages.ReadSessionMeta(file)
	file.Close()
	if err != nil {
		st, err := f.Load(ctx)
		if err != nil {
			return 0, err
		}
		return st.LastConsolidated, nil
	}
	if meta == nil {
		return 0, nil
	}
	return meta.LastConsolidated, nil
}

// read reads the file; the caller holds the lock. raw tells whether the
// file exists.
func (f *File) read() (*State, bool, error) {
	var h *messages.History
	var err error
	var modTime time.Time
	if f.ws != nil {
		var file *os.File
		file, err = f.ws.OpenFile(f.rel, os.O_RDONLY, 0)
		if err == nil {
			if fi, serr := file.Stat(); serr == nil {
				modTime = fi.ModTime()
			}
			h, err = messages.ReadSessionOpen(file, f.Path, f.History)
			file.Close()
		}
	} else {
		h, err = messages.ReadSessionFile(f.Path, f.History)
		if fi, serr := os.Stat(f.Path); serr == nil {
			modTime = fi.ModTime()
		}
	}
	if errors.Is(err, fs.ErrNotExist) {
		return &State{Key: f.key()}, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	st := &State{Key: f.key(), Messages: h.Messages}
	if m := h.Meta; m != nil {
		if m.Key != "" {
			st.Key = m.Key
		}
		st.CreatedAt, st.UpdatedAt, st.LastConsolidated, st.Meta = m.CreatedAt, m.UpdatedAt, m.LastConsolidated, m.Extra
	}
	if modTime.After(st.UpdatedAt) {
		st.UpdatedAt = modTime.UTC()
	}
	return st, true, nil
}

// Append adds msgs in one write under the lock. A new file gets its
// metadata record first. A file whose last line was torn (a crash during
// a write by a program without loom's lock) gets a newline first, so the
// new lines stay whole.
func (f *File) Append(ctx context.Context, msgs ...messages.Message) error {
	_, err := f.AppendTurn(ctx, "", msgs...)
	return err
}

// turnTail is how much of a session file's end a retried turn's ID is
// looked for in.
const turnTail = 64 << 10

// AppendTurn is Append unless a message carrying turn id (Extra key
// TurnKey) is in the last 64 KiB of the file; it reports whether it
// appended. The check and the append are one step under the lock. An
// empty id always appends.
func (f *File) AppendTurn(ctx context.Context, id string, msgs ...messages.Message) (bool, error) {
	if len(msgs) == 0 {
		return true, nil
	}
	l, err := f.lock(ctx)
	if err != nil {
		return false, err
	}
	defer l.Release()
	file, err := f.open(os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return false, err
	}
	defer file.Close()
	fi, err := file.Stat()
	if err != nil {
		return false, err
	}
	if !fi.Mode().IsRegular() {
		return false, fmt.Errorf("%s: not a regular file", f.Path)
	}
	var buf []byte
	if fi.Size() == 0 {
		now := f.now().UTC()
		buf = messages.AppendMeta(buf, messages.SessionMeta{Key: f.key(), CreatedAt: now, UpdatedAt: now})
	} else {
		if id != "" {
			dup, err := hasTurnTail(file, fi.Size(), id)
			if err != nil || dup {
				return false, err
			}
		}
		if last, err := lastByte(file, fi.Size()); err != nil {
			return false, err
		} else if last != '\n' {
			buf = append(buf, '\n')
		}
	}
	for _, m := range msgs {
		if buf, err = messages.AppendJSONL(buf, m); err != nil {
			return false, fmt.Errorf("%s: %w", f.Path, err)
		}
	}
	n, err := file.Write(buf)
	if err == nil && n != len(buf) {
		err = io.ErrShortWrite
	}
	if err != nil {
		return false, fmt.Errorf("%s: append: %w", f.Path, err)
	}
	return true, nil
}

// hasTurnTail reports whether the last turnTail bytes of a session file
// hold a message whose TurnKey is id. Inside a JSON string every quote is
// escaped, so the key and value with bare quotes match only the key
// itself.
func hasTurnTail(f *os.File, size int64, id string) (bool, error) {
	n := min(size, turnTail)
	tail := make([]byte, n)
	if _, err := f.ReadAt(tail, size-n); err != nil && err != io.EOF {
		return false, err
	}
	want, _ := json.Marshal(id)
	marker := append([]byte(`"`+TurnKey+`":`), want...)
	return containsByEnd(tail, marker), nil
}

// containsByEnd is bytes.Contains(s, sub) for a long sub that starts with
// a byte common in s (a quote, in JSON): bytes.Index then gives up its
// vector search for a rolling hash over all of s, some 100 µs for 64 KiB.
// It searches for sub's last 32 bytes instead (the end of an id, rare) and
// checks the rest before each match.
func containsByEnd(s, sub []byte) bool {
	const k = 32
	if len(sub) <= k {
		return bytes.Contains(s, sub)
	}
	head, end := sub[:len(sub)-k], sub[len(sub)-k:]
	for off := len(head); off <= len(s)-k; {
		i := bytes.Index(s[off:], end)
		if i < 0 {
			return false
		}
		at := off + i
		if bytes.Equal(s[at-len(head):at], head) {
			return true
		}
		off = at + 1
	}
	return false
}

func lastByte(f *os.File, size int64) (byte, error) {
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, size-1); err != nil {
		return 0, err
	}
	return b[0], nil
}

// MoveConsolidated moves the pointer under the lock; see Store.
func (f *File) MoveConsolidated(ctx context.Context, from, to int) error {
	l, err := f.lock(ctx)
	if err != nil {
		return err
	}
	defer l.Release()
	st, exists, err := f.read()
	if err != nil {
		return err
	}
	if !exists {
		return fmt.Errorf("%s: %w (the file is gone)", f.Path, ErrPointerMoved)
	}
	if st.LastConsolidated != from {
		return fmt.Errorf("%s: %w (it is at %d, not %d)", f.Path, ErrPointerMoved, st.LastConsolidated, from)
	}
	to = min(to, len(st.Messages))
	if to <= from {
		return nil
	}
	st.LastConsolidated = to
	return f.rewriteMeta(st)
}

// rewriteMeta replaces the metadata record and keeps every message line
// byte for byte; the caller holds the lock and has just read st.
func (f *File) rewriteMeta(st *State) error {
	data, err := f.readAll()
	if err != nil {
		return err
	}
	body := data
	if first, rest, ok := bytes.Cut(bytes.TrimLeft(data, " \t\r\n\ufeff"), []byte("\n")); ok || len(first) > 0 {
		if isMetaLine(first) {
			body = rest
		}
	}
	if t := bytes.TrimSpace(body); len(t) > 0 && t[0] == '[' {
		// A JSON array history becomes JSONL: a metadata record cannot
		// live in an array.
		return f.rewriteAll(st)
	}
	out := messages.AppendMeta(nil, f.meta(st))
	out = append(out, body...)
	return f.replace(out)
}

// readAll reads the whole file; the caller holds the lock.
func (f *File) readAll() ([]byte, error) {
	file, err := f.open(os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	return io.ReadAll(file)
}

func isMetaLine(line []byte) bool {
	return bytes.Contains(line, []byte(`"_type"`)) && bytes.Contains(line, []byte(`"metadata"`))
}

func (f *File) meta(st *State) messages.SessionMeta {
	created := st.CreatedAt
	if created.IsZero() {
		created = f.now().UTC()
	}
	return messages.SessionMeta{Key: st.Key, CreatedAt: created, UpdatedAt: f.now().UTC(),
		LastConsolidated: st.LastConsolidated, Extra: st.Meta}
}

// rewriteAll writes st whole; the caller holds the lock.
func (f *File) rewriteAll(st *State) error {
	out := messages.AppendMeta(nil, f.meta(st))
	var err error
	for _, m := range st.Messages {
		if out, err = messages.AppendJSONL(out, m); err != nil {
			return err
		}
	}
	if err := f.mkdir(); err != nil {
		return err
	}
	return f.replace(out)
}

// Trim drops the first n messages under the lock; see Store.
func (f *File) Trim(ctx context.Context, n int) error {
	l, err := f.lock(ctx)
	if err != nil {
		return err
	}
	defer l.Release()
	st, exists, err := f.read()
	if err != nil || !exists {
		return err
	}
	n = min(max(n, 0), len(st.Messages))
	st.Messages = st.Messages[n:]
	st.LastConsolidated = 0
	st.CreatedAt = f.now().UTC()
	return f.rewriteAll(st)
}
