package messages

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
)

// DefaultMaxLineBytes caps one JSONL history line. A cleaned history has no
// inline images, so a longer line is almost always the wrong file.
const DefaultMaxLineBytes = 8 << 20

// DefaultMaxHistoryBytes caps a history given as one JSON array.
const DefaultMaxHistoryBytes = 256 << 20

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

// HistoryOptions tunes ReadHistory. Zero fields take the defaults.
type HistoryOptions struct {
	MaxLineBytes    int
	MaxHistoryBytes int64
}

// ReadHistoryFile reads a history file; see ReadHistory.
func ReadHistoryFile(path string, opts HistoryOptions) ([]Message, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &HistoryError{Path: path, Err: unwrapPath(err)}
	}
	defer f.Close()
	return ReadHistory(f, path, opts)
}

// ReadHistory reads OpenAI-style chat messages, one JSON object per line
// (JSONL) or as one JSON array, told apart by the first non-blank byte.
// Every message must have the role user, assistant or tool; errors name
// the line. name is used in errors only.
func ReadHistory(r io.Reader, name string, opts HistoryOptions) ([]Message, error) {
	if opts.MaxLineBytes <= 0 {
		opts.MaxLineBytes = DefaultMaxLineBytes
	}
	if opts.MaxHistoryBytes <= 0 {
		opts.MaxHistoryBytes = DefaultMaxHistoryBytes
	}
	br := bufio.NewReaderSize(r, 64<<10)
	first, err := firstByte(br)
	if err == io.EOF {
		return nil, nil
	}
	if err != nil {
		return nil, &HistoryError{Path: name, Err: err}
	}
	if first == '[' {
		return readArray(br, name, opts.MaxHistoryBytes)
	}
	return readLines(br, name, opts.MaxLineBytes)
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
				return 0, io.EOF
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

func readLines(br *bufio.Reader, name string, maxLine int) ([]Message, error) {
	var out []Message
	var line []byte
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
			return nil, &HistoryError{Path: name, Line: n, Err: err}
		}
		text := bytes.TrimSpace(line)
		if len(text) > maxLine {
			return nil, &HistoryError{Path: name, Line: n, Err: fmt.Errorf("%w: over %d bytes", ErrLineTooLong, maxLine)}
		}
		if len(text) > 0 {
			m, perr := parseHistoryMessage(text)
			if perr != nil {
				return nil, &HistoryError{Path: name, Line: n, Err: perr}
			}
			out = append(out, m)
		}
		if err == io.EOF {
			return out, nil
		}
	}
}

func readArray(br *bufio.Reader, name string, max int64) ([]Message, error) {
	data, err := io.ReadAll(io.LimitReader(br, max+1))
	if err != nil {
		return nil, &HistoryError{Path: name, Err: err}
	}
	if int64(len(data)) > max {
		return nil, &HistoryError{Path: name, Err: fmt.Errorf("JSON array over %d bytes", max)}
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(data, &elems); err != nil {
		line := 0
		var se *json.SyntaxError
		var te *json.UnmarshalTypeError
		switch {
		case errors.As(err, &se):
			line = lineAt(data, se.Offset)
		case errors.As(err, &te):
			line = lineAt(data, te.Offset)
		}
		return nil, &HistoryError{Path: name, Line: line, Err: err}
	}
	out := make([]Message, 0, len(elems))
	// Each element's line is found by scanning forward for its bytes; the
	// elements are in order, so the scan is linear.
	pos := 0
	for i, raw := range elems {
		if j := bytes.Index(data[pos:], raw); j >= 0 {
			pos += j
		}
		m, err := parseHistoryMessage(raw)
		if err != nil {
			return nil, &HistoryError{Path: name, Line: lineAt(data, int64(pos)), Err: fmt.Errorf("message %d: %w", i, err)}
		}
		out = append(out, m)
		pos += len(raw)
	}
	return out, nil
}

func lineAt(data []byte, off int64) int {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	return bytes.Count(data[:off], []byte("\n")) + 1
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
		if m.ToolCallID == "" {
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

// WriteJSONL writes messages one JSON object per line.
func WriteJSONL(w io.Writer, msgs []Message) error {
	var line []byte
	for _, m := range msgs {
		var err error
		if line, err = appendMessage(line[:0], m); err != nil {
			return err
		}
		if _, err := w.Write(append(line, '\n')); err != nil {
			return err
		}
	}
	return nil
}
