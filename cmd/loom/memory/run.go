package memory

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/loomctx/loom/cmd/loom/cmdutil"
	"github.com/loomctx/loom/internal/atomicfile"
	"github.com/loomctx/loom/internal/jsonout"
	"github.com/loomctx/loom/memory"
	"github.com/loomctx/loom/memory/pgstore"
	"github.com/loomctx/loom/workspace"
)

func addRun(opts *Options) error {
	wm, err := load(opts.Dir)
	if err != nil {
		return err
	}
	cat := opts.Category
	if cat == "" {
		cat = wm.cats[0].Name
	}
	if err := memory.CheckCategory(wm.cats, cat); err != nil {
		return cmdutil.FlagErrorf("%s", err)
	}
	s, err := wm.open(opts, false)
	if err != nil {
		return err
	}
	defer s.Close()
	ms, err := s.Add(context.Background(), memory.NewMemory{
		Category:   cat,
		Content:    opts.Text,
		User:       opts.User,
		Chat:       opts.Chat,
		Supersedes: opts.Supersedes,
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(opts.IO.Out, ms[0].ID)
	return nil
}

func listRun(opts *Options) error {
	s, err := openStore(opts, true)
	if err != nil {
		return err
	}
	var ms []memory.Memory
	if s != nil {
		defer s.Close()
		ms, err = s.List(context.Background(), memory.Query{User: opts.User, AllUsers: opts.User == "", All: opts.All})
		if err != nil {
			return err
		}
	}
	if opts.JSON {
		if ms == nil {
			ms = []memory.Memory{}
		}
		return jsonout.Write(opts.IO.Out, ms)
	}
	w := bufio.NewWriter(opts.IO.Out)
	for _, m := range ms {
		fmt.Fprintf(w, "%s  %s  %s", m.ID, m.CreatedAt.Format(time.RFC3339), m.Category)
		if m.User != "" {
			fmt.Fprintf(w, "  user=%s", m.User)
		}
		if m.Chat != "" {
			fmt.Fprintf(w, "  chat=%s", m.Chat)
		}
		switch {
		case m.Forgotten:
			fmt.Fprint(w, "  (forgotten)")
		case m.SupersededBy != "":
			fmt.Fprintf(w, "  (superseded by %s)", m.SupersededBy)
		}
		fmt.Fprintf(w, "\n    %s\n", m.Content)
	}
	return w.Flush()
}

func forgetRun(opts *Options) error {
	s, err := openStore(opts, true)
	if err != nil {
		return err
	}
	if s == nil {
		return fmt.Errorf("forget %q: %w (the workspace has no memories)", opts.ID, memory.ErrNotFound)
	}
	defer s.Close()
	if err := s.Forget(context.Background(), opts.ID); err != nil {
		return err
	}
	fmt.Fprintf(opts.IO.ErrOut, "forgot %s\n", opts.ID)
	return nil
}

// record is one line of an import or export file, keys in the documented
// order.
type record struct {
	ID           string `json:"id"`
	Category     string `json:"category"`
	Content      string `json:"content"`
	CreatedAt    string `json:"created_at"`
	User         string `json:"user"`
	Chat         string `json:"chat"`
	SupersededBy string `json:"superseded_by"`
	Forgotten    bool   `json:"forgotten,omitempty"`
}

// maxImportLine bounds one line of an import file. A memory's content is
// at most memory.MaxContentBytes (JSON may spell it six times longer); the
// bound is well above that, so an over-long content is reported as such,
// and low enough that a line never costs much memory. The file as a whole
// has no bound: it is read a line at a time.
const maxImportLine = 4 << 20

func importRun(opts *Options) error {
	in, _, err := cmdutil.OpenInput(opts.File, opts.IO.In)
	if err != nil {
		return err
	}
	defer in.Close()
	s, err := openStore(opts, false)
	if err != nil {
		return err
	}
	defer s.Close()
	src := &lineSource{name: opts.File, r: bufio.NewReaderSize(in, 64<<10)}
	n, err := importAll(s, src)
	if err != nil {
		var le *lineError
		var ie *memory.ImportError
		switch {
		case errors.As(err, &le):
			return le
		case errors.As(err, &ie):
			return fmt.Errorf("%s:%d: %w", opts.File, src.lineOf(ie.Index), err)
		}
		return fmt.Errorf("%s: %w", opts.File, err)
	}
	fmt.Fprintf(opts.IO.ErrOut, "imported %d memories from %s\n", n, opts.File)
	return nil
}

// importAll streams src into a store that can take a stream (SQLite and
// PostgreSQL both can), holding one line at a time; any other store gets
// the memories as one slice, within memory.MaxImport.
func importAll(s memory.Store, src *lineSource) (int, error) {
	ctx := context.Background()
	if st, ok := s.(memory.Streamer); ok {
		return st.ImportFrom(ctx, src.next)
	}
	var ms []memory.Memory
	for {
		m, err := src.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return 0, err
		}
		if len(ms) == memory.MaxImport {
			return 0, fmt.Errorf("more than %d memories: this store imports them in one piece; use SQLite for more", memory.MaxImport)
		}
		ms = append(ms, m)
	}
	return len(ms), s.Import(ctx, ms)
}

// lineError is a line of an import file that cannot be read; it names
// the file and the line.
type lineError struct {
	name string
	line int
	msg  string
}

func (e *lineError) Error() string { return fmt.Sprintf("%s:%d: %s", e.name, e.line, e.msg) }

// lineSource reads an import file's lines as memories, one at a time.
// Blank lines are skipped; skips remembers where, so that an error about
// the i-th memory can name its line without a table of every line.
type lineSource struct {
	name  string
	r     *bufio.Reader
	line  int // lines read
	count int // memories returned
	skips []skip
}

// skip says that from memory index on, blank lines seen so far number
// blanks.
type skip struct{ index, blanks int }

// lineOf is the line number of the memory at index i.
func (l *lineSource) lineOf(i int) int {
	blanks := 0
	for _, s := range l.skips {
		if s.index > i {
			break
		}
		blanks = s.blanks
	}
	return i + 1 + blanks
}

func (l *lineSource) next() (memory.Memory, error) {
	for {
		raw, err := l.readLine()
		if err != nil {
			return memory.Memory{}, err
		}
		l.line++
		text, _ := workspace.Normalize(raw)
		if strings.TrimSpace(text) == "" {
			blanks := l.line - l.count
			if n := len(l.skips); n > 0 && l.skips[n-1].index == l.count {
				l.skips[n-1].blanks = blanks
			} else {
				l.skips = append(l.skips, skip{l.count, blanks})
			}
			continue
		}
		m, err := parseRecord(text)
		if err != nil {
			return memory.Memory{}, &lineError{l.name, l.line, err.Error()}
		}
		l.count++
		return m, nil
	}
}

// readLine returns the next line with its newline, io.EOF after the last;
// a line over maxImportLine is an error naming it.
func (l *lineSource) readLine() ([]byte, error) {
	var acc []byte
	for {
		part, err := l.r.ReadSlice('\n')
		if len(acc)+len(part) > maxImportLine {
			return nil, &lineError{l.name, l.line + 1, fmt.Sprintf("line longer than %d bytes, the bound for one memory", maxImportLine)}
		}
		switch {
		case err == bufio.ErrBufferFull:
			acc = append(acc, part...)
			continue
		case err == io.EOF && len(acc)+len(part) > 0:
			return append(acc, part...), nil
		case err != nil:
			if err != io.EOF {
				err = fmt.Errorf("%s: %w", l.name, err)
			}
			return nil, err
		}
		if acc == nil {
			return part, nil // valid until the next read; parsed before it
		}
		return append(acc, part...), nil
	}
}

// parseRecord reads one import line (without blank space around it
// mattering) as a memory.
func parseRecord(line string) (memory.Memory, error) {
	var r record
	dec := json.NewDecoder(strings.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&r); err != nil {
		return memory.Memory{}, err
	}
	if dec.More() {
		return memory.Memory{}, errors.New("more than one JSON value on the line")
	}
	m := memory.Memory{ID: r.ID, Category: r.Category, Content: r.Content, User: r.User, Chat: r.Chat, SupersededBy: r.SupersededBy, Forgotten: r.Forgotten}
	if r.CreatedAt != "" {
		t, err := time.Parse(time.RFC3339Nano, r.CreatedAt)
		if err != nil {
			return memory.Memory{}, fmt.Errorf("created_at %q is not an RFC 3339 time (years 0000–9999)", r.CreatedAt)
		}
		if t.IsZero() {
			// The store reads the zero time as "no time given".
			return memory.Memory{}, fmt.Errorf("created_at %q is Go's zero time, which means \"no time\"; leave created_at out instead", r.CreatedAt)
		}
		m.CreatedAt = t
	}
	return m, nil
}

func exportRun(opts *Options) error {
	wm, err := load(opts.Dir)
	if err != nil {
		return err
	}
	if opts.FilesDir != "" && storeKind(opts, wm) != "postgres" {
		return cmdutil.FlagErrorf("--files needs --store postgres: with SQLite the memory files already are files, in the workspace's memory/ folder")
	}
	s, err := wm.open(opts, true)
	if err != nil || s == nil {
		return err
	}
	defer s.Close()
	if err := exportAll(s, opts.IO.Out); err != nil {
		return err
	}
	if opts.FilesDir == "" {
		return nil
	}
	pg := s.(pgMemory)
	files, err := pg.db.Sessions(pg.Workspace()).Files(context.Background())
	if err != nil {
		return err
	}
	for _, f := range files {
		if f.Name != pgstore.MemoryFileName && f.Name != pgstore.HistoryFileName {
			continue
		}
		dir := opts.FilesDir
		if f.User != "" {
			name := url.PathEscape(f.User)
			if name == "." || name == ".." {
				return fmt.Errorf("user %q: cannot be a folder name", f.User)
			}
			dir = filepath.Join(dir, "users", name)
		}
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return err
		}
		path := filepath.Join(dir, f.Name)
		if err := atomicfile.WriteFile(path, []byte(f.Content), 0o600); err != nil {
			return err
		}
		fmt.Fprintf(opts.IO.ErrOut, "wrote %s\n", path)
	}
	return nil
}

// exportAll writes every memory as a JSONL line, oldest first, so an
// import keeps the order: streamed from a store that can (SQLite), one
// line at a time, else from one listing.
func exportAll(s memory.Store, out io.Writer) error {
	w := &recordWriter{w: bufio.NewWriterSize(out, 64<<10)}
	w.enc = json.NewEncoder(&w.buf)
	w.enc.SetEscapeHTML(false)
	if st, ok := s.(memory.Streamer); ok {
		if err := st.ExportTo(context.Background(), w.write); err != nil {
			return err
		}
		return w.w.Flush()
	}
	ms, err := s.List(context.Background(), memory.Query{AllUsers: true, All: true})
	if err != nil {
		return err
	}
	slices.Reverse(ms)
	for _, m := range ms {
		if err := w.write(m); err != nil {
			return err
		}
	}
	return w.w.Flush()
}

// recordWriter writes memories as export lines.
type recordWriter struct {
	w   *bufio.Writer
	buf bytes.Buffer
	enc *json.Encoder
}

func (rw *recordWriter) write(m memory.Memory) error {
	rw.buf.Reset()
	if err := rw.enc.Encode(record{
		ID:           m.ID,
		Category:     m.Category,
		Content:      m.Content,
		CreatedAt:    m.CreatedAt.UTC().Format(time.RFC3339Nano),
		User:         m.User,
		Chat:         m.Chat,
		SupersededBy: m.SupersededBy,
		Forgotten:    m.Forgotten,
	}); err != nil {
		return err
	}
	_, err := rw.w.Write(rw.buf.Bytes())
	return err
}
