package memory

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"hash/crc32"
	"io"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/loomctx/loom/internal/zerocopy"
)

// The listing cache. A render lists every active workspace-wide memory
// (Query{}), thousands of rows, and a one-shot `loom render` pays for that
// listing in full each time: it was about a fifth of a cold render of the
// large workspace with its 2,000 memories. The store keeps its last such
// listing in a file beside the database (as SQLite keeps its -wal and -shm
// files) and hands it out again while the database's change counter says
// nothing was written since.
//
// Safety:
//   - The counter (schema migration 3) moves inside every transaction that
//     writes to memories, and the listing is saved with the counter read in
//     the same statement, so from the same snapshot: the same counter means
//     the same rows.
//   - The key also holds the database's random id and its file's device,
//     inode, size and modification time, so another database, or a copy
//     put in its place, never matches.
//   - The file ends in a CRC-32C of everything before it and is bounded in
//     size; anything that does not read back whole (cut, garbled, another
//     format, too large, not a regular file) is not used, counted, and
//     replaced by the next listing.
//   - It is written to a new private (0600) file and renamed into place, so
//     a reader sees an old file or a new one, never half of one, whatever
//     other processes write at the same time; it is opened without
//     following a symlink.
//   - A failure to read or write it costs only the query it saves.
//
// Cost: a handle saves the listing once at most, the first time it lists
// from the database, which is all a one-shot render does; a long-lived
// process (loom serve, loom chat) keeps its own listing in memory and does
// not rewrite the file after every write it makes. A file that does not
// hold is told by its first bytes (the key), without reading the rest.

const (
	listCacheMagic = "LOOMLST1"
	// maxListCache bounds the file, read or written.
	maxListCache = 64 << 20
	// listCacheSuffix names the file: the database's path and this.
	listCacheSuffix = "-list"
)

// castagnoli is built on first use: making the table runs crc32's set-up
// for CRC-32C (about 1.2 million instructions), which every loom command,
// --version included, would otherwise pay for at start-up.
var castagnoli = sync.OnceValue(func() *crc32.Table { return crc32.MakeTable(crc32.Castagnoli) })

// listCacheBad counts cache files found unusable, for tests.
var listCacheBad atomic.Int64

// listCacheHits counts listings handed out from the cache, for tests.
var listCacheHits atomic.Int64

// cacheable reports whether q's listing is kept: a render's default query,
// the workspace-wide active memories. Other queries (one user's, a chat's,
// everything) are listed from the database each time.
func cacheable(q Query) bool { return q == Query{} }

func (s *SQLite) listCachePath() string { return s.abs + listCacheSuffix }

// listKey is what a saved listing must carry to be used: the database's
// id and change counter (ver, as the listing query reads them), and its
// file's identity now.
func (s *SQLite) listKey(ver string) (string, bool) {
	st, err := os.Stat(s.abs)
	if err != nil {
		return "", false
	}
	sys, ok := st.Sys().(*syscall.Stat_t)
	if !ok {
		return "", false
	}
	return ver + " dev=" + strconv.FormatUint(uint64(sys.Dev), 10) +
		" ino=" + strconv.FormatUint(uint64(sys.Ino), 10) +
		" size=" + strconv.FormatInt(st.Size(), 10) +
		" mtime=" + strconv.FormatInt(st.ModTime().UnixNano(), 10) +
		" q=workspace", true
}

// version reads the database's id and change counter.
func (s *SQLite) version(ctx context.Context) (string, error) {
	var ver string
	err := s.retry(ctx, func() error {
		return s.db.QueryRowContext(ctx, `SELECT db || ':' || n FROM changes`).Scan(&ver)
	})
	return ver, err
}

// cachedList returns the saved listing when it holds for the database as
// it is now.
func (s *SQLite) cachedList(ctx context.Context) ([]Memory, bool) {
	ver, err := s.version(ctx)
	if err != nil {
		return nil, false
	}
	key, ok := s.listKey(ver)
	if !ok {
		return nil, false
	}
	data, err := readListCache(s.listCachePath(), key)
	switch {
	case errors.Is(err, errOtherKey):
		return nil, false
	case err != nil:
		if !errors.Is(err, os.ErrNotExist) {
			listCacheBad.Add(1)
		}
		return nil, false
	}
	out, gotKey, err := decodeList(data)
	if err != nil {
		listCacheBad.Add(1)
		return nil, false
	}
	if gotKey != key {
		return nil, false
	}
	listCacheHits.Add(1)
	return out, true
}

// saveList saves out, the listing made at ver, if it is worth keeping.
func (s *SQLite) saveList(ver string, out []Memory) {
	if !s.listSaved.CompareAndSwap(false, true) {
		return
	}
	key, ok := s.listKey(ver)
	if !ok {
		return
	}
	data := encodeList(key, out)
	if len(data) > maxListCache {
		return
	}
	writeListCache(s.listCachePath(), data)
}

// errOtherKey: the file holds a listing made under another key.
var errOtherKey = errors.New("listing cache made under another key")

// readListCache reads the file at path without following a symlink, and
// only if it is a regular file within the bound. When its first bytes show
// a well-formed key other than key, it stops there with errOtherKey.
func readListCache(path, key string) ([]byte, error) {
	fd, err := syscall.Open(path, syscall.O_RDONLY|syscall.O_NOFOLLOW|syscall.O_NONBLOCK|syscall.O_CLOEXEC, 0)
	if err != nil {
		if err == syscall.ENOENT {
			return nil, os.ErrNotExist
		}
		return nil, err
	}
	f := os.NewFile(uintptr(fd), path)
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() || st.Size() > maxListCache {
		return nil, errors.New("not a regular file within the bound")
	}
	data := make([]byte, st.Size())
	head := data[:min(len(data), len(listCacheMagic)+binary.MaxVarintLen64+len(key))]
	if _, err := io.ReadFull(f, head); err != nil {
		return nil, err
	}
	if string(head[:min(len(head), len(listCacheMagic))]) == listCacheMagic {
		if l, k := binary.Uvarint(head[len(listCacheMagic):]); k > 0 {
			at := len(listCacheMagic) + k
			if l != uint64(len(key)) || at+len(key) > len(head) || string(head[at:at+len(key)]) != key {
				return nil, errOtherKey
			}
		}
	}
	if _, err := io.ReadFull(f, data[len(head):]); err != nil {
		return nil, err
	}
	return data, nil
}

// writeListCache puts data at path: a new private file in the same folder,
// renamed over the old one. Errors leave things as they were.
func writeListCache(path string, data []byte) {
	var r [8]byte
	rand.Read(r[:])
	tmp := path + ".tmp-" + hex.EncodeToString(r[:])
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL|syscall.O_NOFOLLOW, 0o600)
	if err != nil {
		return
	}
	_, werr := f.Write(data)
	cerr := f.Close()
	if werr != nil || cerr != nil || os.Rename(tmp, path) != nil {
		os.Remove(tmp)
	}
}

// encodeList lays out a listing: the magic, the key, the count, each
// memory's fields, then a CRC-32C (Castagnoli) of all of it.
func encodeList(key string, ms []Memory) []byte {
	n := len(listCacheMagic) + len(key) + 16
	for i := range ms {
		m := &ms[i]
		n += len(m.ID) + len(m.Category) + len(m.Content) + len(m.User) + len(m.Chat) + len(m.SupersededBy) + 6*3 + 2*10 + 1
	}
	b := make([]byte, 0, n+4)
	b = append(b, listCacheMagic...)
	str := func(s string) {
		b = binary.AppendUvarint(b, uint64(len(s)))
		b = append(b, s...)
	}
	str(key)
	b = binary.AppendUvarint(b, uint64(len(ms)))
	for i := range ms {
		m := &ms[i]
		str(m.ID)
		str(m.Category)
		str(m.Content)
		str(m.User)
		str(m.Chat)
		str(m.SupersededBy)
		b = binary.AppendVarint(b, m.CreatedAt.Unix())
		b = binary.AppendUvarint(b, uint64(m.CreatedAt.Nanosecond()))
		if m.Forgotten {
			b = append(b, 1)
		} else {
			b = append(b, 0)
		}
	}
	return binary.LittleEndian.AppendUint32(b, crc32.Checksum(b, castagnoli()))
}

var errBadListCache = errors.New("unusable listing cache")

// decodeList reads what encodeList wrote, or fails on anything else. The
// memories' strings are cut from data itself, which the caller gives up:
// nothing may write to it afterwards (a listing of 20,000 memories is a few
// MB, and copying it was a third of the decoding).
func decodeList(data []byte) ([]Memory, string, error) {
	if len(data) < len(listCacheMagic)+4 || string(data[:len(listCacheMagic)]) != listCacheMagic {
		return nil, "", errBadListCache
	}
	body := data[:len(data)-4]
	if crc32.Checksum(body, castagnoli()) != binary.LittleEndian.Uint32(data[len(data)-4:]) {
		return nil, "", errBadListCache
	}
	text := zerocopy.String(body)
	pos := len(listCacheMagic)
	bad := false
	uvarint := func() uint64 {
		v, k := binary.Uvarint(body[pos:])
		if k <= 0 {
			bad = true
			return 0
		}
		pos += k
		return v
	}
	str := func() string {
		l := uvarint()
		if bad || l > uint64(len(text)-pos) {
			bad = true
			return ""
		}
		s := text[pos : pos+int(l)]
		pos += int(l)
		return s
	}
	key := str()
	count := uvarint()
	// Each memory takes at least 9 bytes, so the count is bounded by the
	// size before anything is allocated for it.
	if bad || count > uint64(len(body)-pos)/9 {
		return nil, "", errBadListCache
	}
	out := make([]Memory, count)
	for i := range out {
		m := &out[i]
		m.ID, m.Category, m.Content, m.User, m.Chat, m.SupersededBy = str(), str(), str(), str(), str(), str()
		sec, k := binary.Varint(body[pos:])
		if k <= 0 {
			return nil, "", errBadListCache
		}
		pos += k
		nsec := uvarint()
		if bad || nsec > 999_999_999 || pos >= len(body) || body[pos] > 1 {
			return nil, "", errBadListCache
		}
		m.Forgotten = body[pos] == 1
		pos++
		m.CreatedAt = time.Unix(sec, int64(nsec)).UTC()
	}
	if bad || pos != len(body) {
		return nil, "", errBadListCache
	}
	return out, key, nil
}
