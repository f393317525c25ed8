package pgstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/loomctx/loom/messages"
)

// ErrPointerMoved says the consolidation pointer was not where the caller
// read it: another replica consolidated meanwhile, and nothing changed.
var ErrPointerMoved = errors.New("the consolidation pointer was moved by another writer")

// MaxSessionMessages bounds what one Load returns; older messages of a
// longer session stay stored but are not loaded.
const MaxSessionMessages = 100_000

// Sessions keeps the sessions of one workspace: their messages, in order,
// the consolidation pointer, and the memory files (MEMORY.md, HISTORY.md)
// per user. Each step is one transaction; appends to one session queue on
// its row lock, so two replicas never interleave inside one Append, and
// [Sessions.Lock] serialises whole turns across replicas.
//
// Messages are numbered from 0 for the life of the session; Trim moves
// the first kept number (base) forward. Positions a caller sees (the
// pointer, Trim's n) count from the first kept message, as in a session
// file.
type Sessions struct {
	db        *DB
	workspace string
	now       func() time.Time
}

// Sessions returns the session store of workspace.
func (db *DB) Sessions(workspace string) *Sessions {
	return &Sessions{db: db, workspace: workspace, now: time.Now}
}

// SessionState is one session as stored.
type SessionState struct {
	Key          string
	Messages     []messages.Message
	Consolidated int // leading messages already in the memory files
	// CreatedAt and UpdatedAt are the server's times of the first and the
	// last append; zero for a session never written.
	CreatedAt, UpdatedAt time.Time
}

// Load returns the kept messages of key and its pointer; a session never
// written is empty, not an error.
func (s *Sessions) Load(ctx context.Context, key string) (*SessionState, error) {
	st := &SessionState{Key: key}
	// One statement: one snapshot, one round trip.
	rows, err := s.db.pool.Query(ctx, `SELECT s.consolidated, s.created_at, s.updated_at, m.message
		FROM loom_sessions s
		LEFT JOIN loom_session_messages m ON m.workspace = s.workspace AND m.key = s.key AND m.n >= s.base
		WHERE s.workspace = $1 AND s.key = $2
		ORDER BY m.n LIMIT $3`, s.workspace, key, MaxSessionMessages)
	if err != nil {
		return nil, fmt.Errorf("session: PostgreSQL: %w", unavailable(err))
	}
	defer rows.Close()
	var consolidated int64
	for rows.Next() {
		var raw []byte
		if err := rows.Scan(&consolidated, &st.CreatedAt, &st.UpdatedAt, &raw); err != nil {
			return nil, fmt.Errorf("session: PostgreSQL: %w", unavailable(err))
		}
		if raw == nil { // a session whose messages were all trimmed
			continue
		}
		var m messages.Message
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("session %q: message %d: %w", key, len(st.Messages), err)
		}
		st.Messages = append(st.Messages, m)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("session: PostgreSQL: %w", unavailable(err))
	}
	st.Consolidated = int(min(consolidated, int64(len(st.Messages))))
	return st, nil
}

// Pointer returns key's consolidation pointer alone (0 for a session
// never written), for readers that need not load the messages.
func (s *Sessions) Pointer(ctx context.Context, key string) (int, error) {
	var consolidated int64
	err := s.db.pool.QueryRow(ctx, `SELECT consolidated FROM loom_sessions WHERE workspace = $1 AND key = $2`,
		s.workspace, key).Scan(&consolidated)
	if errors.Is(err, pgx.ErrNoRows) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("session: PostgreSQL: %w", unavailable(err))
	}
	return int(consolidated), nil
}

// Append adds msgs at the end of key in one statement (so one
// transaction), creating the session if needed. Concurrent appends to one
// session queue on its row.
func (s *Sessions) Append(ctx context.Context, key string, msgs ...messages.Message) error {
	if len(msgs) == 0 {
		return nil
	}
	raws := make([]string, len(msgs))
	for i, m := range msgs {
		b, err := json.Marshal(m)
		if err != nil {
			return fmt.Errorf("session %q: message %d: %w", key, i, err)
		}
		raws[i] = string(b)
	}
	_, err := s.db.pool.Exec(ctx, `WITH s AS (
			INSERT INTO loom_sessions (workspace, key, next) VALUES ($1, $2, $3)
			ON CONFLICT (workspace, key) DO UPDATE SET next = loom_sessions.next + $3, updated_at = now()
			RETURNING next - $3 AS first)
		INSERT INTO loom_session_messages (workspace, key, n, message)
		SELECT $1, $2, s.first + t.i - 1, t.msg::json FROM s, unnest($4::text[]) WITH ORDINALITY AS t(msg, i)`,
		s.workspace, key, int64(len(raws)), raws)
	if err != nil {
		return fmt.Errorf("session: PostgreSQL: %w", unavailable(err))
	}
	return nil
}

// AppendTurn is Append unless one of key's last 64 messages has turn id
// under the "loom_turn" key, in one statement; it reports whether it
// appended. A replica that retries a turn whose commit it did not see
// answered (the connection broke during COMMIT) stores it once.
func (s *Sessions) AppendTurn(ctx context.Context, key, id string, msgs ...messages.Message) (bool, error) {
	if len(msgs) == 0 {
		return true, nil
	}
	raws := make([]string, len(msgs))
	for i, m := range msgs {
		b, err := json.Marshal(m)
		if err != nil {
			return false, fmt.Errorf("session %q: message %d: %w", key, i, err)
		}
		raws[i] = string(b)
	}
	tag, err := s.db.pool.Exec(ctx, `WITH dup AS (
			SELECT 1 FROM loom_session_messages m, loom_sessions o
			WHERE o.workspace = $1 AND o.key = $2 AND m.workspace = $1 AND m.key = $2
				AND m.n >= o.next - 64 AND m.message->>'loom_turn' = $5
			LIMIT 1),
		s AS (
			INSERT INTO loom_sessions (workspace, key, next) SELECT $1, $2, $3 WHERE NOT EXISTS (SELECT 1 FROM dup)
			ON CONFLICT (workspace, key) DO UPDATE SET next = loom_sessions.next + $3, updated_at = now()
			RETURNING next - $3 AS first)
		INSERT INTO loom_session_messages (workspace, key, n, message)
		SELECT $1, $2, s.first + t.i - 1, t.msg::json FROM s, unnest($4::text[]) WITH ORDINALITY AS t(msg, i)`,
		s.workspace, key, int64(len(raws)), raws, id)
	if err != nil {
		return false, fmt.Errorf("session: PostgreSQL: %w", unavailable(err))
	}
	return tag.RowsAffected() > 0, nil
}

// MoveConsolidated moves key's pointer from `from` to `to` (forward only,
// at most to the last kept message). If the pointer is not at from, it
// returns an error matching [ErrPointerMoved] and changes nothing.
func (s *Sessions) MoveConsolidated(ctx context.Context, key string, from, to int) error {
	return s.consolidate(ctx, key, from, to, nil, false)
}

// MemoryFiles is what one consolidation writes beside the pointer.
type MemoryFiles struct {
	User          string // whose files; "" for the workspace's
	Memory        string // the whole new MEMORY.md; "" leaves it as it is
	HistoryAppend string // an entry to add at the end of HISTORY.md
}

// Names of the memory files in the database, as in a workspace folder.
const (
	MemoryFileName  = "MEMORY.md"
	HistoryFileName = "HISTORY.md"
)

// Consolidate moves the pointer as MoveConsolidated does and, in the same
// transaction, replaces the user's MEMORY.md and appends to HISTORY.md: a
// consolidation is stored whole or not at all, and a second replica's
// consolidation of the same messages finds the pointer moved.
func (s *Sessions) Consolidate(ctx context.Context, key string, from, to int, files MemoryFiles) error {
	return s.consolidate(ctx, key, from, to, &files, false)
}

// ArchiveAndTrim is what /new stores, in one transaction: the memory
// files as Consolidate writes them, then the first n kept messages
// dropped and the pointer set to 0, provided the pointer is still at
// from (else ErrPointerMoved, and nothing changes).
func (s *Sessions) ArchiveAndTrim(ctx context.Context, key string, from, n int, files MemoryFiles) error {
	return s.consolidate(ctx, key, from, n, &files, true)
}

func (s *Sessions) consolidate(ctx context.Context, key string, from, to int, files *MemoryFiles, trim bool) error {
	if to < from || from < 0 {
		return fmt.Errorf("session %q: cannot move the consolidation pointer from %d back to %d", key, from, to)
	}
	err := pgx.BeginFunc(ctx, s.db.pool, func(tx pgx.Tx) error {
		var base, next, consolidated int64
		err := tx.QueryRow(ctx, `SELECT base, next, consolidated FROM loom_sessions WHERE workspace = $1 AND key = $2 FOR UPDATE`, s.workspace, key).Scan(&base, &next, &consolidated)
		if errors.Is(err, pgx.ErrNoRows) {
			base, next, consolidated = 0, 0, 0
		} else if err != nil {
			return err
		}
		if consolidated != int64(from) {
			return &userErr{fmt.Errorf("session %q: pointer at %d, not %d: %w", key, consolidated, from, ErrPointerMoved)}
		}
		if int64(to) > next-base {
			return &userErr{fmt.Errorf("session %q: pointer %d is past the last message (%d)", key, to, next-base)}
		}
		if trim {
			nb := base + int64(to)
			if _, err := tx.Exec(ctx, `UPDATE loom_sessions SET base = $3, consolidated = 0 WHERE workspace = $1 AND key = $2`, s.workspace, key, nb); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `DELETE FROM loom_session_messages WHERE workspace = $1 AND key = $2 AND n < $3`, s.workspace, key, nb); err != nil {
				return err
			}
		} else if _, err := tx.Exec(ctx, `UPDATE loom_sessions SET consolidated = $3 WHERE workspace = $1 AND key = $2`, s.workspace, key, int64(to)); err != nil {
			return err
		}
		if files == nil || (files.Memory == "" && files.HistoryAppend == "") {
			return nil
		}
		// Every replica's prompt of this user drops its memory section.
		if err := bumpVersions(ctx, tx, s.workspace, []string{files.User}); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `SELECT pg_notify($1, $2)`, Channel, s.workspace+"\x1f"+files.User); err != nil {
			return err
		}
		if files.Memory != "" {
			if _, err := tx.Exec(ctx, `INSERT INTO loom_memory_files (workspace, user_id, name, content) VALUES ($1, $2, $3, $4)
			ON CONFLICT (workspace, user_id, name) DO UPDATE SET content = EXCLUDED.content`, s.workspace, files.User, MemoryFileName, files.Memory); err != nil {
				return err
			}
		}
		if files.HistoryAppend != "" {
			if _, err := tx.Exec(ctx, `INSERT INTO loom_memory_files (workspace, user_id, name, content) VALUES ($1, $2, $3, $4)
				ON CONFLICT (workspace, user_id, name) DO UPDATE SET content = loom_memory_files.content || EXCLUDED.content`, s.workspace, files.User, HistoryFileName, files.HistoryAppend); err != nil {
				return err
			}
		}
		return nil
	})
	var ue *userErr
	if errors.As(err, &ue) {
		return ue.err
	}
	if err != nil {
		return fmt.Errorf("session: PostgreSQL: %w", unavailable(err))
	}
	return nil
}

// Trim drops the first n kept messages of key (those /new archived) and
// sets the pointer to 0; messages appended after them stay.
func (s *Sessions) Trim(ctx context.Context, key string, n int) error {
	if n <= 0 {
		return nil
	}
	err := pgx.BeginFunc(ctx, s.db.pool, func(tx pgx.Tx) error {
		var base, next int64
		err := tx.QueryRow(ctx, `SELECT base, next FROM loom_sessions WHERE workspace = $1 AND key = $2 FOR UPDATE`, s.workspace, key).Scan(&base, &next)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil
		}
		if err != nil {
			return err
		}
		nb := min(base+int64(n), next)
		if _, err := tx.Exec(ctx, `UPDATE loom_sessions SET base = $3, consolidated = 0 WHERE workspace = $1 AND key = $2`, s.workspace, key, nb); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, `DELETE FROM loom_session_messages WHERE workspace = $1 AND key = $2 AND n < $3`, s.workspace, key, nb)
		return err
	})
	if err != nil {
		return fmt.Errorf("session: PostgreSQL: %w", unavailable(err))
	}
	return nil
}

// ReadFile returns one of user's memory files ([MemoryFileName] or
// [HistoryFileName]); ok is false when it was never written.
func (s *Sessions) ReadFile(ctx context.Context, user, name string) (text string, ok bool, err error) {
	err = s.db.pool.QueryRow(ctx, `SELECT content FROM loom_memory_files WHERE workspace = $1 AND user_id = $2 AND name = $3`, s.workspace, user, name).Scan(&text)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	if err != nil {
		return "", false, fmt.Errorf("session: PostgreSQL: %w", unavailable(err))
	}
	return text, true, nil
}

// Lock takes key's session lock, waiting until ctx ends: every replica
// runs a session's turns and consolidations one after another under it.
// It is a PostgreSQL advisory lock held on one connection of the DB's
// lock pool (apart from the connections that do the work, which a locked
// turn needs), so when a replica dies (SIGKILL, a lost network) the server
// drops the connection and the lock with it. release gives the lock back.
func (s *Sessions) Lock(ctx context.Context, key string) (release func(), err error) {
	conn, err := s.db.lockPool.Acquire(ctx)
	if err != nil {
		return nil, fmt.Errorf("session: PostgreSQL: %w", unavailable(err))
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock(hashtext($1), hashtext($2))`, s.workspace, key); err != nil {
		// A cancelled wait leaves the connection unsure: do not reuse it.
		conn.Conn().Close(context.Background())
		conn.Release()
		return nil, fmt.Errorf("session %q: waiting for its lock: %w", key, unavailable(err))
	}
	var once bool
	return func() { unlock(&once, conn, s.workspace, key) }, nil
}

// TryLock takes key's session lock if no one holds it; ok is false when
// someone does, and nothing is held.
func (s *Sessions) TryLock(ctx context.Context, key string) (release func(), ok bool, err error) {
	conn, err := s.db.lockPool.Acquire(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("session: PostgreSQL: %w", unavailable(err))
	}
	if err := conn.QueryRow(ctx, `SELECT pg_try_advisory_lock(hashtext($1), hashtext($2))`, s.workspace, key).Scan(&ok); err != nil {
		conn.Conn().Close(context.Background())
		conn.Release()
		return nil, false, fmt.Errorf("session %q: taking its lock: %w", key, unavailable(err))
	}
	if !ok {
		conn.Release()
		return nil, false, nil
	}
	var once bool
	return func() { unlock(&once, conn, s.workspace, key) }, true, nil
}

func unlock(done *bool, conn *pgxpool.Conn, workspace, key string) {
	if *done {
		return
	}
	*done = true
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock(hashtext($1), hashtext($2))`, workspace, key); err != nil {
		// The lock may still be held: closing the connection drops it.
		conn.Conn().Close(ctx)
	}
	conn.Release()
}

// MemoryFile is one memory file kept in the database.
type MemoryFile struct {
	User    string // "" for the workspace's own
	Name    string // MemoryFileName or HistoryFileName
	Content string
}

// Files returns every memory file of the workspace, by user then name.
func (s *Sessions) Files(ctx context.Context) ([]MemoryFile, error) {
	rows, err := s.db.pool.Query(ctx, `SELECT user_id, name, content FROM loom_memory_files WHERE workspace = $1 ORDER BY user_id, name`, s.workspace)
	if err != nil {
		return nil, fmt.Errorf("session: PostgreSQL: %w", unavailable(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (MemoryFile, error) {
		var f MemoryFile
		err := r.Scan(&f.User, &f.Name, &f.Content)
		return f, err
	})
	if err != nil {
		return nil, fmt.Errorf("session: PostgreSQL: %w", unavailable(err))
	}
	return out, nil
}
