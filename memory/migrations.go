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

	// 2: created_at as Unix seconds and nanoseconds, so that every time
	// from year 0 to 9999 is kept exactly (nanoseconds in one int64 reach
	// only 1678–2262). SQLite cannot change a column's meaning in place, so
	// the table is rebuilt; the floor division keeps times before 1970.
	`CREATE TABLE memories_v2 (
		seq           INTEGER PRIMARY KEY AUTOINCREMENT,
		id            TEXT    NOT NULL UNIQUE,
		category      TEXT    NOT NULL,
		content       TEXT    NOT NULL,
		user          TEXT    NOT NULL DEFAULT '',
		chat          TEXT    NOT NULL DEFAULT '',
		created_s     INTEGER NOT NULL,
		created_ns    INTEGER NOT NULL DEFAULT 0 CHECK (created_ns BETWEEN 0 AND 999999999),
		superseded_by TEXT    NOT NULL DEFAULT '',
		forgotten     INTEGER NOT NULL DEFAULT 0
	);
	INSERT INTO memories_v2 (seq, id, category, content, user, chat, created_s, created_ns, superseded_by, forgotten)
		SELECT seq, id, category, content, user, chat,
			(created_at - ((created_at % 1000000000) + 1000000000) % 1000000000) / 1000000000,
			((created_at % 1000000000) + 1000000000) % 1000000000,
			superseded_by, forgotten
		FROM memories;
	DROP TABLE memories;
	ALTER TABLE memories_v2 RENAME TO memories;
	CREATE INDEX memories_active ON memories (user, created_s DESC, created_ns DESC, seq DESC)
		WHERE superseded_by = '' AND forgotten = 0;
	CREATE INDEX memories_created ON memories (created_s DESC, created_ns DESC, seq DESC);
	CREATE INDEX memories_superseded_by ON memories (superseded_by) WHERE superseded_by <> '';`,

	// 3: a change counter that every write to memories moves, inside the
	// writing transaction, and a random id of this database, so that a
	// listing saved beside the file (listcache.go) can tell whether it
	// still holds from one cheap read. A later migration that rebuilds the
	// memories table drops these triggers with it and must make them again.
	`CREATE TABLE changes (
		one INTEGER PRIMARY KEY CHECK (one = 1),
		n   INTEGER NOT NULL,
		db  TEXT    NOT NULL
	);
	INSERT INTO changes (one, n, db) VALUES (1, 0, lower(hex(randomblob(16))));
	` + insertTrigger + `;
	CREATE TRIGGER memories_changed_update AFTER UPDATE ON memories BEGIN UPDATE changes SET n = n + 1; END;
	CREATE TRIGGER memories_changed_delete AFTER DELETE ON memories BEGIN UPDATE changes SET n = n + 1; END;`,

	// 4: a full-text index of content and category for Search. It holds
	// no copy of the text (content='memories'); triggers keep it in the
	// writing transaction, and 'rebuild' indexes what a database already
	// has. The porter tokenizer stems English words, so "running" finds
	// "runs"; remove_diacritics lets "cafe" find "café". The rank weighs a
	// word in the content four times one in the category's name.
	`CREATE VIRTUAL TABLE memories_fts USING fts5(content, category,
		content='memories', content_rowid='seq',
		tokenize='porter unicode61 remove_diacritics 2');
	INSERT INTO memories_fts(memories_fts) VALUES ('rebuild');
	INSERT INTO memories_fts(memories_fts, rank) VALUES ('rank', 'bm25(1.0, 0.25)');
	` + ftsInsertTrigger + `;
	CREATE TRIGGER memories_fts_delete AFTER DELETE ON memories BEGIN
		INSERT INTO memories_fts (memories_fts, rowid, content, category) VALUES ('delete', old.seq, old.content, old.category);
	END;
	CREATE TRIGGER memories_fts_update AFTER UPDATE OF content, category ON memories BEGIN
		INSERT INTO memories_fts (memories_fts, rowid, content, category) VALUES ('delete', old.seq, old.content, old.category);
		INSERT INTO memories_fts (rowid, content, category) VALUES (new.seq, new.content, new.category);
	END;`,

	// 5: embedding vectors (memory.embeddings), one per memory and model,
	// written after the memory by a background worker (see
	// [VectorStore]). vec is the vector as little-endian float32; user is
	// the memory's, so a search of one scope reads no memory row. id grows
	// with every vector written, so a reader can fetch only what is new.
	// A memory deleted or rewritten loses its vectors in the same
	// statement.
	`CREATE TABLE memory_vectors (
		id    INTEGER PRIMARY KEY AUTOINCREMENT,
		seq   INTEGER NOT NULL,
		model TEXT    NOT NULL,
		user  TEXT    NOT NULL,
		vec   BLOB    NOT NULL,
		UNIQUE (seq, model)
	);
	CREATE INDEX memory_vectors_model ON memory_vectors (model, id);
	-- Vectors are only added, except by these triggers, which count
	-- their removals so that a reader's copy knows to start over.
	CREATE TABLE vector_removals (one INTEGER PRIMARY KEY CHECK (one = 1), n INTEGER NOT NULL);
	INSERT INTO vector_removals (one, n) VALUES (1, 0);
	CREATE TRIGGER memory_vectors_delete AFTER DELETE ON memories BEGIN
		DELETE FROM memory_vectors WHERE seq = old.seq;
		UPDATE vector_removals SET n = n + 1;
	END;
	CREATE TRIGGER memory_vectors_update AFTER UPDATE OF content ON memories BEGIN
		DELETE FROM memory_vectors WHERE seq = old.seq;
		UPDATE vector_removals SET n = n + 1;
	END;`,
}

// insertTrigger moves the change counter on every insert. Import, which
// inserts thousands of rows in one transaction, drops it for that
// transaction and moves the counter once (the per-row update doubled an
// import's time), then makes it again before committing.
const insertTrigger = `CREATE TRIGGER memories_changed_insert AFTER INSERT ON memories BEGIN UPDATE changes SET n = n + 1; END`

// ftsInsertTrigger indexes each new memory. Import drops it for its
// transaction and indexes its rows in one statement, then makes it again.
const ftsInsertTrigger = `CREATE TRIGGER memories_fts_insert AFTER INSERT ON memories BEGIN
		INSERT INTO memories_fts (rowid, content, category) VALUES (new.seq, new.content, new.category);
	END`
