package memory

import (
	"errors"
	"fmt"
	"slices"
	"time"
)

// Scope rule. A memory's scope is its User: "" is the whole workspace (it
// enters every user's prompt), anything else is that one user. A memory may
// supersede only a memory of its own scope: a memory for user U replaces
// only U's memories, and a workspace-wide memory is replaced only by a
// workspace-wide add. Every [Store] enforces this in Add and in Import, so
// no caller (automatic extraction included) can move a workspace-wide rule
// into one user's scope.

// ErrScope is wrapped by errors about a supersede across scopes.
var ErrScope = errors.New("memory belongs to another scope")

// ErrCycle is wrapped by errors about superseded_by links that form a loop.
var ErrCycle = errors.New("supersede cycle")

// ScopeError is a supersede refused by the scope rule.
type ScopeError struct {
	ID        string // the memory that would be superseded
	OwnerUser string // its scope
	ByUser    string // the scope of the memory that would replace it
}

func (e *ScopeError) Error() string {
	if e.OwnerUser == "" {
		return fmt.Sprintf("memory %q is workspace-wide: only a workspace-wide memory (no user) may supersede it, not one for user %q", e.ID, e.ByUser)
	}
	if e.ByUser == "" {
		return fmt.Sprintf("memory %q belongs to user %q: a workspace-wide memory may not supersede it (add the new one for that user)", e.ID, e.OwnerUser)
	}
	return fmt.Sprintf("memory %q belongs to user %q: a memory for user %q may not supersede it", e.ID, e.OwnerUser, e.ByUser)
}

func (e *ScopeError) Unwrap() error { return ErrScope }

// The times a store keeps exactly: RFC 3339's four-digit years. Stores keep
// seconds and nanoseconds apart, so the whole range round-trips.
var (
	minTime = time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)
	maxTime = time.Date(9999, 12, 31, 23, 59, 59, 999999999, time.UTC)
)

// CheckTime refuses a time a store cannot keep and export exactly.
func CheckTime(t time.Time) error {
	if t.Before(minTime) || t.After(maxTime) {
		return fmt.Errorf("created_at %s is outside the years 0000–9999", t.UTC().Format(time.RFC3339Nano))
	}
	return nil
}

// PrepareImport checks and cleans an import the same way for every
// store, before any database is touched: each memory has an id given once,
// a known category, content that cleans ([Clean]), a created_at within
// [CheckTime]'s range (a zero one becomes now), no superseded_by naming
// itself, and no loop of superseded_by links among the memories given. It
// returns the cleaned copies; errors are *[ImportError].
//
// Links to ids not in ms are left to the store, which checks them with
// [CheckImportLinks]: a stored memory's links never lead back into an
// import (every link it has names a stored memory), so no loop can pass
// through one.
func PrepareImport(cats []Category, now time.Time, ms []Memory) ([]Memory, error) {
	index := make(map[string]int, len(ms))
	clean := make([]Memory, len(ms))
	for i, m := range ms {
		if _, dup := index[m.ID]; dup && m.ID != "" {
			return nil, &ImportError{Index: i, ID: m.ID, Err: ErrDuplicateID}
		}
		index[m.ID] = i
		c, err := PrepareOne(cats, now, m)
		if err != nil {
			return nil, &ImportError{Index: i, ID: m.ID, Err: err}
		}
		clean[i] = c
	}
	// Each memory has at most one outgoing link, so following links from
	// every memory in turn, marking what each walk visits, finds every loop
	// in linear time.
	const (
		unseen = iota
		onPath
		done
	)
	state := make([]uint8, len(clean))
	for start := range clean {
		var path []int
		i := start
		for {
			if state[i] == done {
				break
			}
			if state[i] == onPath {
				// The loop is the path from i's first visit on.
				var ids []string
				for k := len(path) - 1; k >= 0; k-- {
					ids = append(ids, clean[path[k]].ID)
					if path[k] == i {
						break
					}
				}
				slices.Reverse(ids)
				return nil, LoopError(i, ids)
			}
			state[i] = onPath
			path = append(path, i)
			next, ok := index[clean[i].SupersededBy]
			if clean[i].SupersededBy == "" || !ok {
				break
			}
			i = next
		}
		for _, k := range path {
			state[k] = done
		}
	}
	return clean, nil
}

// ErrDuplicateID is an import's id given twice.
var ErrDuplicateID = errors.New("id appears twice")

// PrepareOne is PrepareImport's check and cleaning of one memory, alone:
// an id, a known category, content that cleans ([Clean]), a time in range
// (a zero one becomes now), no superseded_by naming itself. A store that
// streams an import checks each memory with it as it is read, and the
// rest (ids given twice, links, loops) once the import is staged.
func PrepareOne(cats []Category, now time.Time, m Memory) (Memory, error) {
	if m.ID == "" {
		return m, errors.New("missing id")
	}
	if err := CheckCategory(cats, m.Category); err != nil {
		return m, err
	}
	content, err := Clean(m.Content)
	if err != nil {
		return m, err
	}
	m.Content = content
	if m.CreatedAt.IsZero() {
		m.CreatedAt = now
	}
	m.CreatedAt = m.CreatedAt.UTC()
	if err := CheckTime(m.CreatedAt); err != nil {
		return m, err
	}
	if m.SupersededBy == m.ID {
		return m, fmt.Errorf("superseded_by names the memory itself: %w", ErrCycle)
	}
	return m, nil
}

// LoopError is the error of an import whose superseded_by links loop
// through ids, in link order from the memory at index, the first the walk
// came back to.
func LoopError(index int, ids []string) *ImportError {
	first := ids[0]
	return &ImportError{Index: index, ID: first, Err: fmt.Errorf("superseded_by links loop (%s → %s): %w", joinIDs(ids), first, ErrCycle)}
}

func joinIDs(ids []string) string {
	s := ""
	for i, id := range ids {
		if i > 0 {
			s += " → "
		}
		s += id
	}
	return s
}

// CheckImportLinks checks every superseded_by of a prepared import: it
// must name a memory in the import or, through stored, one already in the
// store, and that memory must be of the same scope (see [ScopeError]).
// stored returns a stored memory's user and whether it exists.
func CheckImportLinks(ms []Memory, stored func(id string) (user string, ok bool, err error)) error {
	users := make(map[string]string, len(ms))
	for _, m := range ms {
		users[m.ID] = m.User
	}
	for i, m := range ms {
		if m.SupersededBy == "" {
			continue
		}
		user, ok := users[m.SupersededBy]
		if !ok {
			var err error
			user, ok, err = stored(m.SupersededBy)
			if err != nil {
				return err
			}
			if !ok {
				return &ImportError{Index: i, ID: m.ID, Err: fmt.Errorf("superseded_by %q: %w", m.SupersededBy, ErrNotFound)}
			}
		}
		if user != m.User {
			return &ImportError{Index: i, ID: m.ID, Err: &ScopeError{ID: m.ID, OwnerUser: m.User, ByUser: user}}
		}
	}
	return nil
}

// CheckAdd checks a batch for Add before any database is touched: content
// cleans ([Clean]: kept as given, white space aside) and the category is
// known. It fills Category, Content, User and Chat of the
// returned memories; the store stamps ID and CreatedAt.
func CheckAdd(cats []Category, ms []NewMemory) ([]Memory, error) {
	out := make([]Memory, len(ms))
	for i, n := range ms {
		content, err := Clean(n.Content)
		if err != nil {
			return nil, err
		}
		if err := CheckCategory(cats, n.Category); err != nil {
			return nil, err
		}
		out[i] = Memory{Category: n.Category, Content: content, User: n.User, Chat: n.Chat}
	}
	return out, nil
}

// CheckBatchLinks, once a store has stamped ids, refuses a Supersedes that names
// the new memory itself, or one added later in the same batch (not stored
// yet when it would be replaced). A later memory of a batch may supersede
// an earlier one.
func CheckBatchLinks(out []Memory, ms []NewMemory) error {
	at := make(map[string]int, len(out))
	for i, m := range out {
		at[m.ID] = i
	}
	for i, n := range ms {
		j, ok := at[n.Supersedes]
		switch {
		case n.Supersedes == "" || !ok || j < i:
		case j == i:
			return fmt.Errorf("supersedes %q: that is the new memory itself: %w", n.Supersedes, ErrCycle)
		default:
			return fmt.Errorf("supersedes %q: a memory added later in the same call: %w", n.Supersedes, ErrCycle)
		}
	}
	return nil
}
