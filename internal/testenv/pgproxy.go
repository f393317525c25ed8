package testenv

import (
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
)

// PGProxy stands between a test's clients and PostgreSQL on a unix socket
// of its own, so a test can take "the server" away (every connection cut,
// new ones refused) and bring it back without touching the real server
// that other tests share.
type PGProxy struct {
	t      testing.TB
	dir    string
	target func() (net.Conn, error)

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]bool
}

// NewPGProxy starts a proxy to the server dsn names and returns it with a
// DSN that reaches the server through it. It is stopped when the test ends.
func NewPGProxy(t testing.TB, dsn string) (*PGProxy, string) {
	t.Helper()
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
	// A short folder: a unix socket's path is limited to about 100 bytes,
	// which t.TempDir's names can exceed.
	dir, err := os.MkdirTemp("", "loompx")
	if err != nil {
		t.Fatal(err)
	}
	p := &PGProxy{t: t, dir: dir, target: target, conns: map[net.Conn]bool{}}
	p.Up()
	t.Cleanup(func() { p.Down(); os.RemoveAll(dir) })
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

// Up accepts connections again (after Down).
func (p *PGProxy) Up() {
	ln, err := net.Listen("unix", filepath.Join(p.dir, ".s.PGSQL.5432"))
	if err != nil {
		p.t.Error(err) // may run on a test's helper goroutine: no Fatal
		return
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

// Down cuts every connection and refuses new ones.
func (p *PGProxy) Down() {
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
