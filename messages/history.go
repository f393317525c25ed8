package messages

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
	"time"
)

// DefaultMaxLineBytes caps one JSONL history line. A cleaned history has no
// inline images, so a longer line is almost always the wrong file.
const DefaultMaxLineBytes = 8 << 20

// DefaultMaxHistoryBytes caps the bytes read of one history, JSONL or JSON
// array. Decoded messages take about as much memory as their JSON, so this
// also bounds what a history costs.
const DefaultMaxHistoryBytes = 64 << 20

// HistoryError is a history input that cannot be read, located by file and
// line.
type HistoryError struct {
	Path string
	Line int
	Err  error
}

func (e *HistoryError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %v", e.Path, e.Line, e.Err)
	}
	return fmt.Sprintf("%s: %v", e.Path, e.Err)
}

func (e *HistoryError) Unwrap() error { return e.Err }

// ErrLineTooLong is wrapped by a HistoryError for a line over the cap.
var ErrLineTooLong = errors.New("line too long")

// ErrHistoryTooLarge is wrapped by a HistoryError for a history over the
// byte cap.
var ErrHistoryTooLarge = errors.New("history too large")

// ErrNotAFile is wrapped by a HistoryError for a history path that names a
// folder or another file that is not a regular file.
var ErrNotAFile = errors.New("not a history file")

// HistoryOptions tunes ReadHistory. Zero fields take the defaults.
type HistoryOptions struct {
	// MaxLineBytes caps one JSONL line; default DefaultMaxLineBytes.
	MaxLineBytes int
	// MaxHistoryBytes caps the whole input; default DefaultMaxHistoryBytes.
	MaxHistoryBytes int64
}

func (o HistoryOptions) withDefaults() HistoryOptions {
	if o.MaxLineBytes <= 0 {
		o.MaxLineBytes = DefaultMaxLineBytes
	}
	if o.MaxHistoryBytes <= 0 {
		o.MaxHistoryBytes = DefaultMaxHistoryBytes
	}
	return o
}

// SessionMeta is the metadata record that opens a session file, as loom and
// nanobot write it: {"_type":"metadata","key":...,"created_at":...,
// "updated_at":...,"metadata":{...},"last_consolidated":N}. Keys loom does
// not know are kept in Extra (nanobot's "metadata" object among them).
type SessionMeta struct {
	Key       string
	CreatedAt time.Time
	UpdatedAt time.Time
	// LastConsolidated is how many leading messages are already in the
	// memory files.
	LastConsolidated int
	Extra            map[string]json.RawMessage
}

// History is a history file as read: its messages and, for a session file,
// the metadata record of its first line.
type History struct {
	// Meta is nil when the input had no metadata record.
	Meta     *SessionMeta
	Messages []Message
}

// ReadHistoryFile reads a history file and returns its messages; a
// session metadata record is checked and left out. See ReadSession.
func ReadHistoryFile(path string, opts HistoryOptions) ([]Message, error) {
	h, err := ReadSessionFile(path, opts)
	if err != nil {
		return nil, err
	}
	return h.Messages, nil
}

// ReadHistory reads a history from r; see ReadSession. name is used in
// errors only.
func ReadHistory(r io.Reader, name string, opts HistoryOptions) ([]Message, error) {
	h, err := ReadSession(r, name, opts)
	if err != nil {
		return nil, err
	}
	return h.Messages, nil
}

// ReadSessionFile reads the history or session file at path. A folder, a
// device or a FIFO is refused with an error naming it; a missing file is an
// error (the caller decides whether that means an empty history).
func ReadSessionFile(path string, opts HistoryOptions) (*History, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, &HistoryError{Path: path, Err: unwrapPath(err)}
	}
	defer f.Close()
	return ReadSessionOpen(f, path, opts)
}

// ReadSessionOpen is ReadSessionFile for a file already open, such as one
// opened through a workspace's door; path names it in errors. The caller
// closes f.
func ReadSessionOpen(f *os.File, path string, opts HistoryOptions) (*History, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, &HistoryError{Path: path, Err: unwrapPath(err)}
	}
	if err := CheckHistoryFile(path, st); err != nil {
		return nil, err
	}
	opts = opts.withDefaults()
	if st.Size() > opts.MaxHistoryBytes {
		return nil, &HistoryError{Path: path, Err: fmt.Errorf("%w: %d bytes, over the cap of %d", ErrHistoryTooLarge, st.Size(), opts.MaxHistoryBytes)}
	}
	return ReadSession(f, path, opts)
}

// CheckHistoryFile refuses what is not a regular file, with an error that
// names the path and says what it is instead (a folder, a named pipe...).
func CheckHistoryFile(path string, st fs.FileInfo) error {
	if st.Mode().IsRegular() {
		return nil
	}
	what := "not a regular file"
	switch t := st.Mode().Type(); {
	case t&fs.ModeDir != 0:
		what = "a folder"
	case t&fs.ModeNamedPipe != 0:
		what = "a named pipe"
	case t&fs.ModeSocket != 0:
		what = "a socket"
	case t&fs.ModeDevice != 0:
		what = "a device"
	case t&fs.ModeSymlink != 0:
		what = "a symbolic link"
	}
	return &HistoryError{Path: path, Err: fmt.Errorf("%w: it is %s", ErrNotAFile, what)}
}

// ReadSession reads OpenAI-style chat messages, one JSON object per line
// (JSONL) or as one JSON array, told apart by the first non-blank byte.
// JSONL may open with a session metadata record (loom's and nanobot's
// session files do); it is returned in Meta. Every message must have the
// role user, assistant or tool. A "timestamp" without a zone counts as UTC (and is written back without one), and
// keys loom does not know are kept in each message's Extra. Both forms are
// decoded as they stream, and at most opts.MaxHistoryBytes are read; errors
// name the line.
func ReadSession(r io.Reader, name string, opts HistoryOptions) (*History, error) {
	opts = opts.withDefaults()
	cr := &capReader{r: r, max: opts.MaxHistoryBytes}
	br := bufio.NewReaderSize(cr, 64<<10)
	first, err := firstByte(br)
	if err == io.EOF {
		return &History{}, nil
	}
	if err != nil {
		return nil, &HistoryError{Path: name, Err: capErr(err, opts.MaxHistoryBytes)}
	}
	if first == '[' {
		return readArray(br, name, opts.MaxHistoryBytes)
	}
	return readLines(br, name, opts)
}

// capReader fails once more than max bytes were asked of it.
type capReader struct {
	r    io.Reader
	max  int64
	read int64
}

var errOverCap = errors.New("over the cap")

func (c *capReader) Read(p []byte) (int, error) {
	if c.read > c.max {
		return 0, errOverCap
	}
	if rest := c.max + 1 - c.read; int64(len(p)) > rest {
		p = p[:rest]
	}
	n, err := c.r.Read(p)
	c.read += int64(n)
	if c.read > c.max {
		return n, errOverCap
	}
	return n, err
}

func capErr(err error, max int64) error {
	if errors.Is(err, errOverCap) {
		return fmt.Errorf("%w: over the cap of %d bytes", ErrHistoryTooLarge, max)
	}
	return err
}

// firstByte peeks past a byte-order mark and blank space.
func firstByte(br *bufio.Reader) (byte, error) {
	if b, err := br.Peek(3); err == nil && string(b) == "\ufeff" {
		br.Discard(3)
	}
	for i := 1; ; i++ {
		b, err := br.Peek(i)
		if err != nil {
			if len(b) == 0 || err == io.EOF {
				if err == io.EOF || err == bufio.ErrBufferFull {
					return 0, io.EOF
				}
				return 0, err
			}
			return 0, err
		}
		switch c := b[i-1]; c {
		case ' ', '\t', '\r', '\n':
			if i == br.Size() {
				// A buffer of blanks: drop it and keep looking.
				br.Discard(i)
				i = 0
			}
			continue
		default:
			return c, nil
		}
	}
}

func readLines(br *bufio.Reader, name string, opts HistoryOptions) (*History, error) {
	h := &History{}
	maxLine := opts.MaxLineBytes
	var line []byte
	sawRecord := false
	for n := 1; ; n++ {
		line = line[:0]
		var err error
		for {
			var chunk []byte
			chunk, err = br.ReadSlice('\n')
			if len(line)+len(chunk) > maxLine+2 { // room for "\r\n"
				return nil, &HistoryError{Path: name, Line: n, Err: fmt.Errorf("%w: over %d bytes", ErrLineTooLong, maxLine)}
			}
			line = append(line, chunk...)
			if err != bufio.ErrBufferFull {
				break
			}
		}
		if err != nil && err != io.EOF {
			return nil, &HistoryError{Path: name, Line: n, Err: capErr(err, opts.MaxHistoryBytes)}
		}
		text := bytes.TrimSpace(line)
		if len(text) > maxLine {
			return nil, &HistoryError{Path: name, Line: n, Err: fmt.Errorf("%w: over %d bytes", ErrLineTooLong, maxLine)}
		}
		if len(text) > 0 {
			if isMetaRecord(text) {
				if sawRecord {
					return nil, &HistoryError{Path: name, Line: n, Err: errors.New("a metadata record may only be the first line")}
				}
				meta, perr := parseMeta(text)
				if perr != nil {
					return nil, &HistoryError{Path: name, Line: n, Err: perr}
				}
				h.Meta = meta
			} else {
				m, perr := parseHistoryMessage(text)
				if perr != nil {
					return nil, &HistoryError{Path: name, Line: n, Err: perr}
				}
				h.Messages = append(h.Messages, m)
			}
			sawRecord = true
		}
		if err == io.EOF {
			if h.Meta != nil && h.Meta.LastConsolidated > len(h.Messages) {
				// A pointer past the end (messages removed by hand) keeps
				// nothing unconsolidated rather than failing.
				h.Meta.LastConsolidated = len(h.Messages)
			}
			return h, nil
		}
	}
}

// readArray decodes a JSON array element by element, so no copy of the
// whole input is held besides the messages themselves.
func readArray(br *bufio.Reader, name string, max int64) (*History, error) {
	lc := &lineCounter{r: br}
	dec := json.NewDecoder(lc)
	fail := func(err error, off int64) error {
		err = capErr(err, max)
		line := 0
		var se *json.SyntaxError
		if errors.As(err, &se) {
			off = se.Offset
		}
		if off >= 0 {
			line = lc.lineAt(off)
		}
		return &HistoryError{Path: name, Line: line, Err: err}
	}
	if _, err := dec.Token(); err != nil { // the '['
		return nil, fail(err, dec.InputOffset())
	}
	h := &History{}
	for i := 0; dec.More(); i++ {
		start := dec.InputOffset()
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fail(err, dec.InputOffset())
		}
		// The element starts after the separator and blanks that follow
		// start; find its first byte for the line number.
		at := lc.skipBlank(start)
		m, err := parseHistoryMessage(raw)
		if err != nil {
			return nil, &HistoryError{Path: name, Line: lc.lineAt(at), Err: fmt.Errorf("message %d: %w", i, err)}
		}
		h.Messages = append(h.Messages, m)
		lc.forget(dec.InputOffset())
	}
	if _, err := dec.Token(); err != nil { // the ']'
		return nil, fail(err, dec.InputOffset())
	}
	if _, err := dec.Token(); err != io.EOF {
		if err == nil {
			err = errors.New("data after the closing ]")
		}
		return nil, fail(err, dec.InputOffset())
	}
	return h, nil
}

// lineCounter remembers the bytes the decoder has read but not yet passed,
// and how many newlines came before them, so an offset maps to a line
// without keeping the whole input.
type lineCounter struct {
	r     io.Reader
	base  int64  // offset of buf[0]
	lines int    // newlines before base
	buf   []byte // bytes from base on
}

func (c *lineCounter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.buf = append(c.buf, p[:n]...)
	return n, err
}

// forget drops the bytes before off.
func (c *lineCounter) forget(off int64) {
	k := int(off - c.base)
	if k <= 0 {
		return
	}
	k = min(k, len(c.buf))
	c.lines += bytes.Count(c.buf[:k], []byte("\n"))
	c.buf = append(c.buf[:0], c.buf[k:]...)
	c.base += int64(k)
}

func (c *lineCounter) lineAt(off int64) int {
	k := int(min(max(off-c.base, 0), int64(len(c.buf))))
	return c.lines + bytes.Count(c.buf[:k], []byte("\n")) + 1
}

// skipBlank returns the offset of the first byte at or after off that is
// neither blank nor a comma.
func (c *lineCounter) skipBlank(off int64) int64 {
	for k := int(max(off-c.base, 0)); k < len(c.buf); k++ {
		switch c.buf[k] {
		case ' ', '\t', '\r', '\n', ',':
			continue
		}
		return c.base + int64(k)
	}
	return off
}

// isMetaRecord reports whether a line is a session metadata record.
func isMetaRecord(line []byte) bool {
	if !bytes.Contains(line, []byte(`"_type"`)) {
		return false
	}
	var probe struct {
		Type string `json:"_type"`
	}
	return json.Unmarshal(line, &probe) == nil && probe.Type == "metadata"
}

func parseMeta(line []byte) (*SessionMeta, error) {
	var all map[string]json.RawMessage
	if err := json.Unmarshal(line, &all); err != nil {
		return nil, fmt.Errorf("metadata: %w", err)
	}
	m := &SessionMeta{}
	for k, v := range all {
		var err error
		switch k {
		case "_type":
		case "key":
			err = json.Unmarshal(v, &m.Key)
		case "created_at", "updated_at":
			t, ok := parseTimestamp(v)
			if !ok {
				err = fmt.Errorf("cannot read time %s", v)
				break
			}
			if k == "created_at" {
				m.CreatedAt = t
			} else {
				m.UpdatedAt = t
			}
		case "last_consolidated":
			if err = json.Unmarshal(v, &m.LastConsolidated); err == nil && m.LastConsolidated < 0 {
				err = fmt.Errorf("%d is negative", m.LastConsolidated)
			}
		default:
			if m.Extra == nil {
				m.Extra = make(map[string]json.RawMessage)
			}
			m.Extra[k] = append(json.RawMessage(nil), v...)
		}
		if err != nil {
			return nil, fmt.Errorf("metadata %s: %w", k, err)
		}
	}
	return m, nil
}

// metaTime is how a metadata time is written: UTC without a zone, six
// fractional digits, which every Python's datetime.fromisoformat reads
// (nanobot's own files have the same form, in local time).
const metaTime = "2006-01-02T15:04:05.000000"

// metaKeys are the keys of a metadata record loom writes itself.
var metaKeys = map[string]bool{"_type": true, "key": true, "created_at": true, "updated_at": true,
	"metadata": true, "last_consolidated": true}

// AppendMeta writes meta as a metadata record line, newline included, in
// the key order nanobot writes, then the Extra keys loom does not know.
func AppendMeta(dst []byte, meta SessionMeta) []byte {
	start := len(dst)
	dst = append(dst, `{"_type":"metadata"`...)
	if meta.Key != "" {
		dst = append(dst, `,"key":`...)
		dst = appendString(dst, meta.Key)
	}
	for _, f := range [...]struct {
		key string
		t   time.Time
	}{{"created_at", meta.CreatedAt}, {"updated_at", meta.UpdatedAt}} {
		if !f.t.IsZero() {
			dst = append(dst, `,"`+f.key+`":`...)
			dst = appendString(dst, f.t.UTC().Format(metaTime))
		}
	}
	dst = append(dst, `,"metadata":`...)
	if v := bytes.TrimSpace(meta.Extra["metadata"]); len(v) > 0 && json.Valid(v) {
		if c, err := appendCompact(dst, v); err == nil {
			dst = c
		} else {
			dst = append(dst, "{}"...)
		}
	} else {
		dst = append(dst, "{}"...)
	}
	dst = fmt.Appendf(dst, `,"last_consolidated":%d}`, meta.LastConsolidated)
	if out, err := appendExtra(dst, meta.Extra, metaKeys); err == nil {
		dst = out
	} else {
		dst = dst[:start] // an unwritable extra key: write the record without extras
		meta.Extra = map[string]json.RawMessage{"metadata": meta.Extra["metadata"]}
		return AppendMeta(dst, meta)
	}
	return append(dst, '\n')
}

// AppendJSONL writes m as one JSON line, newline included: the OpenAI form
// plus "timestamp" and the Extra keys.
func AppendJSONL(dst []byte, m Message) ([]byte, error) {
	dst, err := appendMessage(dst, m)
	if err != nil {
		return dst, err
	}
	return append(dst, '\n'), nil
}

// RoleError is a message whose role cannot appear in history.
type RoleError struct{ Role Role }

func (e *RoleError) Error() string {
	switch e.Role {
	case "":
		return "message has no role"
	case RoleSystem, "developer":
		return fmt.Sprintf("role %q cannot appear in history: loom builds the system prompt itself", e.Role)
	}
	return fmt.Sprintf("unknown role %q (want user, assistant or tool)", e.Role)
}

func parseHistoryMessage(data []byte) (Message, error) {
	if len(data) == 0 || data[0] != '{' {
		return Message{}, errors.New("want a JSON object")
	}
	var m Message
	if err := json.Unmarshal(data, &m); err != nil {
		return Message{}, err
	}
	if err := checkHistoryMessage(m); err != nil {
		return Message{}, err
	}
	return m, nil
}

func checkHistoryMessage(m Message) error {
	switch m.Role {
	case RoleUser, RoleAssistant:
	case RoleTool:
		if m.ToolCallID() == "" {
			return errors.New("tool message has no tool_call_id")
		}
	default:
		return &RoleError{Role: m.Role}
	}
	if m.Role != RoleAssistant && len(m.ToolCalls) > 0 {
		return fmt.Errorf("%s message has tool_calls; only assistant messages may", m.Role)
	}
	return nil
}

// WriteJSONL writes messages one JSON object per line, timestamps and
// unknown keys kept.
func WriteJSONL(w io.Writer, msgs []Message) error {
	var line []byte
	for _, m := range msgs {
		var err error
		if line, err = AppendJSONL(line[:0], m); err != nil {
			return err
		}
		if _, err := w.Write(line); err != nil {
			return err
		}
	}
	return nil
}

// maxMetaLine bounds how much of a session file ReadSessionMeta reads.
const maxMetaLine = 64 << 10

// ReadSessionMeta reads only the metadata record that opens a session
// file, for callers that need the consolidation pointer and not the
// messages. It returns nil, nil when the first line is not a metadata
// record (a plain history, or an empty file), and an error when that line
// goes on past 64 KiB (read the whole file then).
func ReadSessionMeta(r io.Reader) (*SessionMeta, error) {
	head, err := io.ReadAll(io.LimitReader(r, maxMetaLine))
	if err != nil {
		return nil, err
	}
	whole := len(head) < maxMetaLine
	head = bytes.TrimLeft(head, " \t\r\n\ufeff")
	line, _, found := bytes.Cut(head, []byte("\n"))
	if !found && !whole {
		return nil, fmt.Errorf("metadata: the first line is longer than %d bytes", maxMetaLine)
	}
	line = bytes.TrimSpace(line)
	if len(line) == 0 || !isMetaRecord(line) {
		return nil, nil
	}
	return parseMeta(line)
}
