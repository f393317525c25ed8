package consolidate

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/loomctx/loom/internal/atomicfile"
	"github.com/loomctx/loom/messages"
)

// Session is a conversation file: JSON lines, the first of which may be a
// metadata record {"_type":"metadata", ...} holding the consolidation
// pointer; every other line is one message with an optional timestamp.
// A plain JSONL history, or a JSON array of messages, reads as a session
// with the pointer at 0.
type Session struct {
	Key       string    `json:"key,omitempty"`
	CreatedAt time.Time `json:"created_at,omitzero"`
	UpdatedAt time.Time `json:"updated_at,omitzero"`
	// LastConsolidated is how many leading messages are already in the
	// memory files.
	LastConsolidated int       `json:"last_consolidated"`
	Messages         []Message `json:"-"`
}

// maxLine bounds one session line (a long pasted message or tool result).
const maxLine = 16 << 20

// ReadSession reads the session at path; a missing file is an empty
// session. Errors name the file and line.
func ReadSession(path string) (*Session, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return &Session{}, nil
	}
	if err != nil {
		return nil, err
	}
	s := &Session{}
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		if err := json.Unmarshal(trimmed, &s.Messages); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		return s, s.check(path, nil)
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 64<<10), maxLine)
	var lines []int
	for n := 1; sc.Scan(); n++ {
		line := bytes.TrimSpace(sc.Bytes())
		if len(line) == 0 {
			continue
		}
		var probe struct {
			Type string `json:"_type"`
		}
		if err := json.Unmarshal(line, &probe); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		if probe.Type == "metadata" {
			if err := json.Unmarshal(line, s); err != nil {
				return nil, fmt.Errorf("%s:%d: metadata: %w", path, n, err)
			}
			continue
		}
		var m Message
		if err := json.Unmarshal(line, &m); err != nil {
			return nil, fmt.Errorf("%s:%d: %w", path, n, err)
		}
		s.Messages = append(s.Messages, m)
		lines = append(lines, n)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return s, s.check(path, lines)
}

func (s *Session) check(path string, lines []int) error {
	for i, m := range s.Messages {
		switch m.Role {
		case messages.RoleUser, messages.RoleAssistant, messages.RoleTool:
		default:
			where := path
			if lines != nil {
				where = fmt.Sprintf("%s:%d", path, lines[i])
			}
			return fmt.Errorf("%s: role %q: want user, assistant or tool", where, m.Role)
		}
	}
	if s.LastConsolidated < 0 || s.LastConsolidated > len(s.Messages) {
		return fmt.Errorf("%s: last_consolidated %d is outside 0..%d", path, s.LastConsolidated, len(s.Messages))
	}
	return nil
}

// Save writes the session to path atomically, creating its folder.
func (s *Session) Save(path string) error {
	var b bytes.Buffer
	meta := struct {
		Type string `json:"_type"`
		*Session
	}{"metadata", s}
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(meta); err != nil {
		return err
	}
	for _, m := range s.Messages {
		if err := enc.Encode(m); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return atomicfile.WriteFile(path, b.Bytes(), 0o644)
}
