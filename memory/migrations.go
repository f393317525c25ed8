package memory

// migrations are applied in order, each once; a database's schema version is
// the number applied. Never edit or reorder one that has shipped: append.
var migrations = []string{
	// 1: the memories table. seq keeps insertion order as the tie-break
	// between equal created_at; times are Unix nanoseconds in UTC.
	`CREATE TABLE memories (
		seq           INTEGER PRIMARY KEY AUTOINCREMENT,
		id            TEXT    NOT NULL UNIQUE,
		category      TEXT    NOT NULL,
		content       TEXT    NOT NULL,
		user          TEXT    NOT NULL DEFAULT '',
		chat          TEXT    NOT NULL DEFAULT '',
		created_at    INTEGER NOT NULL,
		superseded_by TEXT    NOT NULL DEFAULT '',
		forgotten     INTEGER NOT NULL DEFAULT 0
	);
	-- The prompt's query: one scope's active memories, newest first.
	CREATE INDEX memories_active ON memories (user, created_at DESC, seq DESC)
		WHERE superseded_by = '' AND forgotten = 0;
	-- Listing everything, and import's check of superseded_by.
	CREATE INDEX memories_created ON memories (created_at DESC, seq DESC);
	CREATE INDEX memories_superseded_by ON memories (superseded_by) WHERE superseded_by <> '';`,
}
