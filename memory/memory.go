// Package memory keeps what an agent remembers: structured memories in a
// store (SQLite by default), the long-term memory file memory/MEMORY.md and
// the append-only log memory/HISTORY.md, and chooses which memories enter a
// prompt within a token budget: by priority ([Select]) and, per turn, by
// relevance ([RecallFor]: the store's ranking by words, fused with a
// ranking by meaning when the store keeps embedding vectors, see
// [VectorStore] and package embedding).
package memory

import (
	"context"
	"time"
)

// Memory is one remembered instruction or fact.
type Memory struct {
	ID           string    `json:"id"`
	Category     string    `json:"category"`
	Content      string    `json:"content"`
	User         string    `json:"user"`           // scope: a user id; "" is the workspace as a whole
	Chat         string    `json:"chat,omitempty"` // the chat it came from, if any
	CreatedAt    time.Time `json:"created_at"`
	SupersededBy string    `json:"superseded_by,omitempty"`
	Forgotten    bool      `json:"forgotten,omitempty"` // soft-deleted by forget
}

// Category is a kind of memory. Categories are ordered by priority: the
// first one enters the prompt first.
type Category struct {
	Name  string `json:"name"`
	Label string `json:"label"`
}

// DefaultCategories are used when loom.yaml names none.
var DefaultCategories = []Category{
	{Name: "global_rule", Label: "Global User Rules"},
	{Name: "personal_fact", Label: "User Profile"},
}

// NewMemory is what a caller asks the store to add. Supersedes, when set,
// names an active memory that the new one replaces.
type NewMemory struct {
	Category   string
	Content    string
	User       string
	Chat       string
	Supersedes string
}

// Query selects memories from a store.
type Query struct {
	User        string // "" selects the workspace-wide scope only
	AllUsers    bool   // ignore User and return every scope
	ExcludeChat string // leave out memories that came from this chat
	All         bool   // include superseded and forgotten memories
}

// Store keeps memories. The SQLite store is the default; a server-grade
// store (PostgreSQL, say) can implement the same interface without touching
// callers. Implementations are safe for concurrent use.
type Store interface {
	// Add normalises and inserts memories in one transaction, marking each
	// superseded memory in the same transaction. A Supersedes id that does not
	// exist fails the whole call; nothing is written.
	Add(ctx context.Context, ms ...NewMemory) ([]Memory, error)
	// List returns the memories q selects, newest first.
	List(ctx context.Context, q Query) ([]Memory, error)
	// Forget soft-deletes a memory; it stays listable with Query.All.
	Forget(ctx context.Context, id string) error
	// Import adds exported memories as they are (ids and times kept), all or
	// nothing.
	Import(ctx context.Context, ms []Memory) error
	Close() error
}
