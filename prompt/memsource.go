package prompt

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/loomctx/loom/memory"
	"github.com/loomctx/loom/workspace"
)

// MemorySource is where a builder reads structured memories when they are
// not in the workspace's SQLite database: a store shared by several server
// replicas (PostgreSQL's, in package memory/pgstore), say.
type MemorySource interface {
	// List returns the memories a prompt for q.User holds.
	List(ctx context.Context, q memory.Query) ([]memory.Memory, error)
	// Version grows whenever the memories may have changed, written
	// through this replica or another. ok is false while changes can go
	// unseen; the builder then lists them again on every render.
	Version() (v uint64, ok bool)
}

// MemoryFileSource is a MemorySource that also keeps each user's long-term
// memory file, as consolidation writes it beside sessions kept in
// PostgreSQL. A prompt shows it in place of the workspace's
// memory/MEMORY.md when it has one for the user; its changes move the
// source's Version like any other.
type MemoryFileSource interface {
	MemoryFile(ctx context.Context, user string) (text string, ok bool, err error)
}

// FreshMemorySource is a MemorySource that can read, at render time, a
// version that counts every committed change to what a prompt for user
// holds (PostgreSQL's memory store does, in one lookup). The builder then
// keys reuse on it instead of Version, so a render started after a write
// was acknowledged anywhere holds it, whether or not the change notice has
// arrived yet. An error fails the render.
type FreshMemorySource interface {
	FreshVersion(ctx context.Context, user string) (uint64, error)
}

// SetMemorySource makes the builder read memories from src instead of the
// workspace's memory database; nil goes back to the database. The builder
// does not close src. Renders from then on use it: nothing cached from
// the previous source is reused.
func (b *Builder) SetMemorySource(src MemorySource) {
	b.mu.Lock()
	b.src = src
	b.mu.Unlock()
	b.Invalidate()
}

// Invalidate tells the builder that its memories changed (a write it could
// not see: through another handle on the store, say), so the next render
// lists them again instead of reusing its last result. Safe to call at any
// time, from any goroutine.
func (b *Builder) Invalidate() {
	b.emb.notify() // a write: its memories wait for their vectors
	b.memEpoch.Add(1)
	b.mu.Lock()
	b.memFP, b.memSelKey, b.memSel, b.memList, b.memFile = "", "", nil, nil, nil
	b.recent = nil
	b.mu.Unlock()
}

// memorySource is the source set with SetMemorySource, or nil.
func (b *Builder) memorySource() MemorySource {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.src
}

// unknownStamps makes stamps that never match, for a source that cannot
// tell whether it changed.
var unknownStamps atomic.Uint64

// memStamp is the memories' state as far as the builder can tell without
// reading them: the local invalidations, and the source's version. A
// render is reused without gathering only while it is unchanged. "" means
// the state is unknown, which no reuse may match.
func (b *Builder) memStamp(ctx context.Context, user string) string {
	e := strconv.FormatUint(b.memEpoch.Load(), 10)
	src := b.memorySource()
	if src == nil {
		return e
	}
	if fs, ok := src.(FreshMemorySource); ok {
		v, err := fs.FreshVersion(ctx, user)
		if err != nil {
			return ""
		}
		return e + "/db" + strconv.FormatUint(v, 10)
	}
	v, ok := src.Version()
	if !ok {
		return ""
	}
	return e + "/" + strconv.FormatUint(v, 10)
}

// listFromSource lists the memories of the render's user from src. The
// fingerprint it returns keys the builder's listing and selection caches
// as the database file's size and time do: the version is read before the
// listing, so a change landing in between is listed again next time.
//
// A source that keeps memory files also gives the user's MEMORY.md, which
// then replaces the workspace's in st.
func (b *Builder) listFromSource(ctx context.Context, st *state, src MemorySource) (list []memory.Memory, fp string, err error) {
	stamp := b.memStamp(ctx, st.opts.User)
	if stamp == "" {
		stamp = "?" + strconv.FormatUint(unknownStamps.Add(1), 10)
	}
	fp = "source:" + stamp + "\x00" + st.opts.User
	b.mu.Lock()
	list, file, known := b.memList, b.memFile, b.memFP == fp
	b.mu.Unlock()
	if !known {
		list, err = src.List(ctx, memory.Query{User: st.opts.User})
		if err != nil {
			return nil, "", err
		}
		file = nil
		if fs, ok := src.(MemoryFileSource); ok {
			text, ok, err := fs.MemoryFile(ctx, st.opts.User)
			if err != nil {
				return nil, "", err
			}
			if ok && strings.TrimSpace(text) != "" {
				file = &workspace.File{Path: "memory/MEMORY.md", Text: text}
			}
		}
		b.mu.Lock()
		b.memList, b.memFile, b.memFP = list, file, fp
		b.mu.Unlock()
	}
	if file != nil {
		st.memoryText = file
	}
	return list, fp, nil
}
