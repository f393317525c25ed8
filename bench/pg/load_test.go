// Package pg measures loom's shared stores under load: 4 replicas (each
// its own pool and listener, as separate `loom serve` processes would
// have) × 16 clients on one PostgreSQL, against one replica × 16 clients on
// SQLite and session files, in the same run. The clients list memories (a
// render's read), add and forget memories, and take turns on 50 sessions
// shared by every replica (each turn under the session's lock). Run it with a throwaway server:
//
//	bash scripts/pg-test.sh go test -run Load -v ./bench/pg/
//
// LOOM_PG_LOAD_SECONDS sets each phase's length (default 3; the figures
// reported in issue 17's note used 60). The test also checks what the
// load must leave: every acknowledged memory write stored exactly once,
// every forget applied, every chain of supersedes whole, and every
// session's turns whole, in order and once each.
package pg

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loomctx/loom/internal/testenv"
	"github.com/loomctx/loom/memory"
	"github.com/loomctx/loom/memory/pgstore"
	"github.com/loomctx/loom/messages"
	"github.com/loomctx/loom/session"
)

// op is one kind of request the load makes.
type op int

const (
	opList   op = iota // what a render reads: one user's memories and the workspace's
	opAdd              // a new memory, superseding the client's previous one
	opForget           // forget one of the client's memories
	opTurn             // a session turn: lock, load, append the user's message and the reply
	nOps
)

var opNames = [nOps]string{"list (render read)", "add+supersede", "forget", "session turn"}

// sessionsShared is how many sessions the clients of every replica share.
const sessionsShared = 50

// pick spreads requests 50% list, 30% turn, 15% add, 5% forget.
func pick(i int) op {
	switch r := i % 20; {
	case r < 10:
		return opList
	case r < 16:
		return opTurn
	case r < 19:
		return opAdd
	default:
		return opForget
	}
}

// replica is one server's view: its memory store and its session store,
// with the lock that serialises a session's turns across replicas.
type replica struct {
	mem      memory.Store
	sessions session.Store
	lockTurn func(ctx context.Context, key string) (func(), error)
}

// localLocks serialises turns within one process (the single SQLite
// replica), as session.Session does.
type localLocks struct {
	mu sync.Mutex
	m  map[string]*sync.Mutex
}

func (l *localLocks) lock(_ context.Context, key string) (func(), error) {
	l.mu.Lock()
	if l.m == nil {
		l.m = map[string]*sync.Mutex{}
	}
	m := l.m[key]
	if m == nil {
		m = &sync.Mutex{}
		l.m[key] = m
	}
	l.mu.Unlock()
	m.Lock()
	return m.Unlock, nil
}

type result struct {
	lat  [nOps][]time.Duration
	errs int
}

// client is one user hammering the store; it remembers what was
// acknowledged so the end state can be checked.
type client struct {
	user   string
	acked  []string // every add acknowledged, in order
	forgot map[string]bool
	turns  []string // every turn acknowledged: its tag
}

func runLoad(t *testing.T, replicas []replica, perStore int, d time.Duration) (result, []*client) {
	ctx := context.Background()
	var (
		mu  sync.Mutex
		res result
		wg  sync.WaitGroup
	)
	clients := make([]*client, len(replicas)*perStore)
	deadline := time.Now().Add(d)
	for si, rep := range replicas {
		s := rep.mem
		for c := range perStore {
			k := si*perStore + c
			cl := &client{user: "u" + strconv.Itoa(k%24), forgot: map[string]bool{}}
			// 24 users shared across replicas: a user's writes come from
			// several replicas at once.
			clients[k] = cl
			wg.Add(1)
			go func() {
				defer wg.Done()
				var local result
				prev := ""
				for i := k; time.Now().Before(deadline); i++ {
					o := pick(i)
					start := time.Now()
					var err error
					switch o {
					case opList:
						_, err = s.List(ctx, memory.Query{User: cl.user})
					case opAdd:
						var ms []memory.Memory
						ms, err = s.Add(ctx, memory.NewMemory{Category: "personal_fact", Content: fmt.Sprintf("client %d fact %d", k, i), User: cl.user, Chat: "c" + strconv.Itoa(k), Supersedes: prev})
						if err == nil {
							prev = ms[0].ID
							cl.acked = append(cl.acked, prev)
						} else {
							// Another client of the same user may have
							// superseded prev meanwhile: start a new chain.
							prev = ""
						}
					case opTurn:
						key := "s" + strconv.Itoa(i%sessionsShared)
						tag := fmt.Sprintf("c%d-%d", k, i)
						var unlock func()
						unlock, err = rep.lockTurn(ctx, key)
						if err != nil {
							break
						}
						if _, err = rep.sessions.Load(ctx, key); err == nil {
							err = rep.sessions.Append(ctx, key,
								messages.Message{Role: messages.RoleUser, Content: messages.TextContent(tag)},
								messages.Message{Role: messages.RoleAssistant, Content: messages.TextContent("re " + tag)})
						}
						unlock()
						if err == nil {
							cl.turns = append(cl.turns, tag)
						}
					case opForget:
						if len(cl.acked) == 0 {
							continue
						}
						id := cl.acked[len(cl.acked)/2]
						err = s.Forget(ctx, id)
						if err == nil {
							cl.forgot[id] = true
						}
					}
					// An add may be refused when a forget took its
					// predecessor; any other failure counts.
					if err != nil && (o != opAdd || !strings.Contains(err.Error(), "supersedes")) {
						local.errs++
						continue
					}
					local.lat[o] = append(local.lat[o], time.Since(start))
				}
				mu.Lock()
				for o := range nOps {
					res.lat[o] = append(res.lat[o], local.lat[o]...)
				}
				res.errs += local.errs
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	return res, clients
}

// checkSessions verifies every session: whole turns (a user message then
// its reply), each acknowledged turn exactly once, each client's turns on
// a session in the order it made them.
func checkSessions(t *testing.T, st session.Store, clients []*client) {
	t.Helper()
	ctx := context.Background()
	seen := map[string]int{}
	for i := range sessionsShared {
		key := "s" + strconv.Itoa(i)
		s, err := st.Load(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		last := map[string]int{}
		for j := 0; j < len(s.Messages); j += 2 {
			if j+1 >= len(s.Messages) {
				t.Errorf("%s: a user message without its reply at the end", key)
				break
			}
			u, a := s.Messages[j], s.Messages[j+1]
			if u.Role != messages.RoleUser || a.Role != messages.RoleAssistant || a.Content.Text != "re "+u.Content.Text {
				t.Errorf("%s: message %d: %q then %q: a turn was interleaved", key, j, u.Content.Text, a.Content.Text)
				break
			}
			seen[u.Content.Text]++
			var c, n int
			fmt.Sscanf(u.Content.Text, "c%d-%d", &c, &n)
			if prev, ok := last[strconv.Itoa(c)]; ok && n <= prev {
				t.Errorf("%s: client %d's turn %d after its turn %d", key, c, n, prev)
			}
			last[strconv.Itoa(c)] = n
		}
	}
	acked := 0
	for _, c := range clients {
		for _, tag := range c.turns {
			acked++
			if seen[tag] != 1 {
				t.Errorf("acknowledged turn %s stored %d times", tag, seen[tag])
			}
		}
	}
	if len(seen) != acked {
		t.Errorf("%d turns stored, %d acknowledged", len(seen), acked)
	}
}

// check verifies the end state against what the clients were told.
func check(t *testing.T, s memory.Store, clients []*client) {
	t.Helper()
	all, err := s.List(context.Background(), memory.Query{AllUsers: true, All: true})
	if err != nil {
		t.Fatal(err)
	}
	byID := make(map[string]memory.Memory, len(all))
	for _, m := range all {
		if _, dup := byID[m.ID]; dup {
			t.Errorf("%s stored twice", m.ID)
		}
		byID[m.ID] = m
	}
	acked := 0
	for _, c := range clients {
		for _, id := range c.acked {
			acked++
			m, ok := byID[id]
			if !ok {
				t.Errorf("acknowledged %s is missing", id)
				continue
			}
			if c.forgot[id] && !m.Forgotten {
				t.Errorf("%s was forgotten, but is not", id)
			}
		}
	}
	if acked != len(all) {
		t.Errorf("%d memories stored, %d acknowledged", len(all), acked)
	}
	// Supersede chains: a memory is superseded by at most one, and each
	// user has one active memory per chain end at most.
	by := map[string]int{}
	for _, m := range all {
		if m.SupersededBy != "" {
			by[m.SupersededBy]++
			if _, ok := byID[m.SupersededBy]; !ok {
				t.Errorf("%s superseded by unknown %s", m.ID, m.SupersededBy)
			}
		}
	}
	for id, n := range by {
		if n > 1 {
			t.Errorf("%s supersedes %d memories", id, n)
		}
	}
}

func pct(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(math.Ceil(p*float64(len(s))))-1)]
}

func report(t *testing.T, name string, r result, d time.Duration) {
	for o := range nOps {
		t.Logf("%-28s %-18s %8.0f req/s  p50 %-10v p99 %v", name, opNames[o], float64(len(r.lat[o]))/d.Seconds(), pct(r.lat[o], 0.50).Round(time.Microsecond), pct(r.lat[o], 0.99).Round(time.Microsecond))
	}
	if r.errs > 0 {
		t.Errorf("%s: %d requests failed", name, r.errs)
	}
}

func loadSeconds() time.Duration {
	if v, err := strconv.Atoi(os.Getenv("LOOM_PG_LOAD_SECONDS")); err == nil && v > 0 {
		return time.Duration(v) * time.Second
	}
	if testing.Short() {
		return time.Second
	}
	return 3 * time.Second
}

// TestLoad runs 4 PostgreSQL replicas × 16 clients, then 1 SQLite
// replica × 16 clients, for the same time, and logs throughput and
// latency per kind of request.
func TestLoad(t *testing.T) {
	dsn := testenv.PostgresDSN(t)
	d := loadSeconds()
	ctx := context.Background()
	var b [6]byte
	rand.Read(b[:])
	ws := "bench/" + hex.EncodeToString(b[:])
	var pgReplicas []replica
	for range 4 {
		db, err := pgstore.Open(ctx, dsn, pgstore.WithMaxConns(8), pgstore.WithLockConns(8))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		st := session.NewPGStore(db, ws)
		pgReplicas = append(pgReplicas, replica{mem: db.Memory(ws), sessions: st, lockTurn: st.LockTurn})
	}
	r, clients := runLoad(t, pgReplicas, 16, d)
	report(t, "postgres 4 replicas × 16", r, d)
	check(t, pgReplicas[0].mem, clients)
	checkSessions(t, pgReplicas[0].sessions, clients)

	dir := t.TempDir()
	sq, err := memory.OpenSQLite(filepath.Join(dir, "memory.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer sq.Close()
	files := session.NewFileStore(filepath.Join(dir, "sessions"), session.FileOptions{LockWait: time.Minute})
	locks := &localLocks{}
	r, clients = runLoad(t, []replica{{mem: sq, sessions: files, lockTurn: locks.lock}}, 16, d)
	report(t, "sqlite+files 1 replica × 16", r, d)
	check(t, sq, clients)
	checkSessions(t, files, clients)
}
