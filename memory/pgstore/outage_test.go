package pgstore

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/loomctx/loom/internal/testenv"
	"github.com/loomctx/loom/memory"
)

// proxy stands between the store and PostgreSQL on a unix socket of its
// own, so a test can take "the server" away (every connection cut, new
// ones refused) and bring it back, without touching the real server that
// other tests share.
type proxy struct {
	t      *testing.T
	dir    string
	target func() (net.Conn, error)

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]bool
}

func newProxy(t *testing.T, dsn string) (*proxy, string) {
	cfg, err := pgconn.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	host, port := cfg.Host, cfg.Port
	target := func() (net.Conn, error) {
		if strings.HasPrefix(host, "/") {
			return net.Dial("unix", filepath.Join(host, fmt.Sprintf(".s.PGSQL.%d", port)))
		}
		return net.Dial("tcp", net.JoinHostPort(host, fmt.Sprint(port)))
	}
	p := &proxy{t: t, dir: t.TempDir(), target: target, conns: map[net.Conn]bool{}}
	p.up()
	t.Cleanup(p.down)
	var out string
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		u, _ := url.Parse(dsn)
		q := u.Query()
		q.Set("host", p.dir)
		q.Set("port", "5432")
		u.RawQuery = q.Encode()
		out = u.String()
	} else {
		out = dsn + " host=" + p.dir + " port=5432"
	}
	return p, out
}

func (p *proxy) up() {
	ln, err := net.Listen("unix", filepath.Join(p.dir, ".s.PGSQL.5432"))
	if err != nil {
		p.t.Fatal(err)
	}
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := p.target()
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns[c], p.conns[s] = true, true
			p.mu.Unlock()
			go func() { io.Copy(s, c); s.Close(); c.Close() }()
			go func() { io.Copy(c, s); s.Close(); c.Close() }()
		}
	}()
}

// down cuts every connection and refuses new ones.
func (p *proxy) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

// The database goes away in the middle of a load and comes back: during
// the outage requests fail with an error matching memory.ErrUnavailable
// (a server's 503), after it they succeed on new connections without a
// restart, the listener comes back, and every acknowledged write is
// stored exactly once.
func TestPGOutageMidLoad(t *testing.T) {
	p, dsn := newProxy(t, testenv.PostgresDSN(t))
	c := ctx
	db, err := Open(c, dsn, WithMaxConns(8))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	s := db.Memory(workspaceName(t))
	var (
		mu          sync.Mutex
		acked       []string
		unavailable int
		other       []error
		stop        = make(chan struct{})
		wg          sync.WaitGroup
	)
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				ms, err := s.Add(c, memory.NewMemory{Category: "personal_fact", Content: fmt.Sprintf("w%d fact %d", w, i), User: fmt.Sprintf("u%d", w)})
				mu.Lock()
				switch {
				case err == nil:
					acked = append(acked, ms[0].ID)
				case errors.Is(err, memory.ErrUnavailable):
					unavailable++
				default:
					other = append(other, err)
				}
				mu.Unlock()
				if err != nil {
					time.Sleep(20 * time.Millisecond)
				}
			}
		}()
	}
	count := func() int { mu.Lock(); defer mu.Unlock(); return len(acked) }
	waitFor := func(what string, cond func() bool) {
		deadline := time.Now().Add(15 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("timed out waiting for %s", what)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	waitFor("writes before the outage", func() bool { return count() > 20 })
	p.down()
	before := count()
	time.Sleep(700 * time.Millisecond)
	if n := count(); n > before+4 {
		t.Errorf("%d writes acknowledged during the outage", n-before)
	}
	if _, err := s.List(c, memory.Query{}); !errors.Is(err, memory.ErrUnavailable) {
		t.Errorf("list during the outage: err = %v, want ErrUnavailable", err)
	}
	if db.Listening() {
		t.Errorf("still listening during the outage")
	}
	p.up()
	during := count()
	waitFor("writes after the outage", func() bool { return count() > during+20 })
	waitFor("the listener to come back", db.Listening)
	close(stop)
	wg.Wait()
	if len(other) > 0 {
		t.Errorf("%d failures that do not say unavailable; first: %v", len(other), other[0])
	}
	if unavailable == 0 {
		t.Errorf("no request failed during the outage")
	}
	all, err := s.List(c, memory.Query{AllUsers: true, All: true})
	if err != nil {
		t.Fatal(err)
	}
	stored := map[string]int{}
	for _, m := range all {
		stored[m.ID]++
	}
	for _, id := range acked {
		if stored[id] != 1 {
			t.Errorf("acknowledged %s stored %d times", id, stored[id])
		}
	}
	t.Logf("%d writes acknowledged, %d refused as unavailable, %d stored", len(acked), unavailable, len(all))
}
