// Package pg measures loom's shared stores under load: several replicas
// (each its own pool and listener, as separate `loom serve` processes
// would have) on one PostgreSQL, against one replica on SQLite, in the same
// run. Run it with a throwaway server:
//
//	bash scripts/pg-test.sh go test -run Load -v ./bench/pg/
//
// LOOM_PG_LOAD_SECONDS sets each phase's length (default 3; the figures
// reported in issue 17's note used 60). The test also checks what the
// load must leave: every acknowledged memory write stored exactly once,
// every forget applied, every chain of supersedes whole.
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
)

// op is one kind of request the load makes.
type op int

const (
	opList   op = iota // what a render reads: one user's memories and the workspace's
	opAdd              // a new memory, superseding the client's previous one
	opForget           // forget one of the client's memories
	nOps
)

var opNames = [nOps]string{"list (render)", "add+supersede", "forget"}

// pick spreads requests 70% list, 20% add, 10% forget.
func pick(i int) op {
	switch r := i % 10; {
	case r < 7:
		return opList
	case r < 9:
		return opAdd
	default:
		return opForget
	}
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
}

func runLoad(t *testing.T, stores []memory.Store, perStore int, d time.Duration) (result, []*client) {
	ctx := context.Background()
	var (
		mu  sync.Mutex
		res result
		wg  sync.WaitGroup
	)
	clients := make([]*client, len(stores)*perStore)
	deadline := time.Now().Add(d)
	for si, s := range stores {
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
		t.Logf("%-26s %-14s %8.0f req/s  p50 %-10v p99 %v", name, opNames[o], float64(len(r.lat[o]))/d.Seconds(), pct(r.lat[o], 0.50).Round(time.Microsecond), pct(r.lat[o], 0.99).Round(time.Microsecond))
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
	var pgStores []memory.Store
	for range 4 {
		db, err := pgstore.Open(ctx, dsn, pgstore.WithMaxConns(16))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		pgStores = append(pgStores, db.Memory(ws, pgstore.WithCategories(memory.DefaultCategories)))
	}
	r, clients := runLoad(t, pgStores, 16, d)
	report(t, "postgres 4 replicas × 16", r, d)
	check(t, pgStores[0], clients)

	sq, err := memory.OpenSQLite(filepath.Join(t.TempDir(), "memory.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer sq.Close()
	r, clients = runLoad(t, []memory.Store{sq}, 16, d)
	report(t, "sqlite 1 replica × 16", r, d)
	check(t, sq, clients)
}
