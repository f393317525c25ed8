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

// maxImportFile bounds the JSONL file memory import reads.
const maxImportFile = 64 << 20

func importRun(opts *Options) error {
	data, err := cmdutil.ReadFileLimit(opts.File, maxImportFile, opts.IO.In)
	if err != nil {
		return err
	}
	ms, lines, err := parseJSONL(opts.File, data)
	if err != nil {
		return err
	}
	s, err := openStore(opts, false)
	if err != nil {
		return err
	}
	defer s.Close()
	if err := s.Import(context.Background(), ms); err != nil {
		var ie *memory.ImportError
		if errors.As(err, &ie) {
			return fmt.Errorf("%s:%d: %w", opts.File, lines[ie.Index], err)
		}
		return fmt.Errorf("%s: %w", opts.File, err)
	}
	fmt.Fprintf(opts.IO.ErrOut, "imported %d memories from %s\n", len(ms), opts.File)
	return nil
}

// parseJSONL reads import lines; lines[i] is the line number of ms[i].
// Blank lines are skipped.
func parseJSONL(name string, data []byte) (ms []memory.Memory, lines []int, err error) {
	text, _ := workspace.Normalize(data)
	for i, line := range strings.Split(text, "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		bad := func(format string, args ...any) error {
			return fmt.Errorf("%s:%d: %s", name, i+1, fmt.Sprintf(format, args...))
		}
		var r record
		dec := json.NewDecoder(strings.NewReader(line))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			return nil, nil, bad("%v", err)
		}
		if dec.More() {
			return nil, nil, bad("more than one JSON value on the line")
		}
		m := memory.Memory{ID: r.ID, Category: r.Category, Content: r.Content, User: r.User, Chat: r.Chat, SupersededBy: r.SupersededBy, Forgotten: r.Forgotten}
		if r.CreatedAt != "" {
			t, err := time.Parse(time.RFC3339Nano, r.CreatedAt)
			if err != nil {
				return nil, nil, bad("created_at %q is not an RFC 3339 time (years 0000–9999)", r.CreatedAt)
			}
			if t.IsZero() {
				// The store reads the zero time as "no time given".
				return nil, nil, bad("created_at %q is Go's zero time, which means \"no time\"; leave created_at out instead", r.CreatedAt)
			}
			m.CreatedAt = t
		}
		ms = append(ms, m)
		lines = append(lines, i+1)
	}
	return ms, lines, nil
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
	ms, err := s.List(context.Background(), memory.Query{AllUsers: true, All: true})
	if err != nil {
		return err
	}
	slices.Reverse(ms) // oldest first, so an import keeps the order
	if err := writeJSONL(opts.IO.Out, ms); err != nil {
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

func writeJSONL(out io.Writer, ms []memory.Memory) error {
	w := bufio.NewWriter(out)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	for _, m := range ms {
		buf.Reset()
		if err := enc.Encode(record{
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
		w.Write(buf.Bytes())
	}
	return w.Flush()
}
