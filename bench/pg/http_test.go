package pg

// The same shared-state guarantees, seen from outside: real `loom serve`
// processes (`--store postgres`) on one PostgreSQL, HTTP clients doing
// turns on shared sessions against a fake model endpoint, memory adds,
// supersedes and forgets, and renders, each request sent to any replica.
//
//	bash scripts/pg-test.sh go test -run HTTP -v ./bench/pg/        # short, as CI runs it
//	bash bench/pg/http.sh 60                                        # figures: 4×16 on PostgreSQL vs 1×16 on SQLite
//
// LOOM_PG_HTTP_SECONDS sets the load's length (default 2) and
// LOOM_PG_HTTP_CLIENTS the clients per replica (default 4); with
// LOOM_PG_HTTP_SQLITE=1 one SQLite replica runs the same load after, and
// the figures of both are printed side by side.

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/loomctx/loom/internal/testenv"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testenv.RemoveLoomBinary()
	os.Exit(code)
}

// fakeModel is an OpenAI-style endpoint that answers every chat turn with
// "re TAG", TAG being the turn's tag from the user's message, so a saved
// session shows which reply belongs to which message. A message holding
// HANG is not answered until release is closed (or the caller leaves).
type fakeModel struct {
	*httptest.Server
	hung    chan struct{} // closed when a HANG message arrived
	release chan struct{}
	once    sync.Once
}

var tagRE = regexp.MustCompile(`tag-[0-9]+-[0-9]+`)

func newFakeModel(t testing.TB) *fakeModel {
	f := &fakeModel{hung: make(chan struct{}), release: make(chan struct{})}
	f.Server = httptest.NewServer(http.HandlerFunc(f.handle))
	t.Cleanup(func() {
		f.once.Do(func() {})
		select {
		case <-f.release:
		default:
			close(f.release)
		}
		f.Close()
	})
	return f
}

func (f *fakeModel) handle(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Stream   bool `json:"stream"`
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<20)).Decode(&body); err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	last := ""
	if n := len(body.Messages); n > 0 {
		last = string(body.Messages[n-1].Content)
	}
	if strings.Contains(last, "HANG") {
		f.once.Do(func() { close(f.hung) })
		select {
		case <-f.release:
		case <-r.Context().Done():
			return
		}
	}
	reply := "re " + tagRE.FindString(last)
	if !body.Stream {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"x","object":"chat.completion","model":"fake","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":{"prompt_tokens":1,"completion_tokens":1,"total_tokens":2}}`, reply)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	fmt.Fprintf(w, "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"model\":\"fake\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":%q},\"finish_reason\":null}]}\n\n", reply)
	fmt.Fprint(w, "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"model\":\"fake\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}],\"usage\":{\"prompt_tokens\":1,\"completion_tokens\":1,\"total_tokens\":2}}\n\ndata: [DONE]\n\n")
}

// httpWorkspace writes a small workspace whose model is the fake.
func httpWorkspace(t testing.TB, model string) string {
	dir := t.TempDir()
	files := map[string]string{
		"AGENTS.md": "# Agent\nAnswer briefly.\n",
		"loom.yaml": "llm:\n  provider: openai\n  base_url: " + model + "/v1\n  model: fake\n  extraction:\n    enabled: false\n  consolidation:\n    enabled: false\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// server is one `loom serve` process.
type server struct {
	cmd  *exec.Cmd
	url  string
	done chan struct{}
	log  *bytes.Buffer
	mu   *sync.Mutex
}

// startServer starts `loom serve -w dir` with args and env, and waits
// until it listens.
func startServer(t testing.TB, dir string, env []string, args ...string) *server {
	t.Helper()
	bin := testenv.LoomBinary(t)
	cmd := exec.Command(bin, append([]string{"serve", "-w", dir, "--addr", "127.0.0.1:0", "--log-level", "warn", "--drain-timeout", "2s"}, args...)...)
	cmd.Env = env
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &server{cmd: cmd, done: make(chan struct{}), log: &bytes.Buffer{}, mu: &sync.Mutex{}}
	urlc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			if _, u, ok := strings.Cut(line, "loom: serving on "); ok {
				urlc <- u
			}
			s.mu.Lock()
			s.log.WriteString(line + "\n")
			s.mu.Unlock()
		}
	}()
	go func() { cmd.Wait(); close(s.done) }()
	select {
	case s.url = <-urlc:
	case <-s.done:
		t.Fatalf("loom serve exited before listening:\n%s", s.logText())
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("loom serve did not start:\n%s", s.logText())
	}
	t.Cleanup(func() { s.stop() })
	return s
}

func (s *server) logText() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.log.String()
}

func (s *server) stop() {
	select {
	case <-s.done:
		return
	default:
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		s.cmd.Process.Kill()
		<-s.done
	}
}

// serverEnv is the environment of a replica: the test's, without the
// operator's model settings, plus extra.
func serverEnv(extra ...string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "LOOM_LLM_") || strings.HasPrefix(kv, "LOOM_MEMORY_") || strings.HasPrefix(kv, "LOOM_PG_") {
			continue
		}
		env = append(env, kv)
	}
	return append(env, extra...)
}

// pgEnv names a workspace of its own in the shared database and gives
// each replica's pool room for its clients.
func pgEnv(t testing.TB) []string { return pgEnvDSN(t, testenv.PostgresDSN(t)) }

func pgEnvDSN(t testing.TB, dsn string) []string {
	var b [6]byte
	rand.Read(b[:])
	if !strings.Contains(dsn, "://") {
		dsn += " pool_max_conns=24"
	}
	return serverEnv("LOOM_PG_DSN="+dsn, "LOOM_PG_WORKSPACE=httptest/"+t.Name()+"/"+hex.EncodeToString(b[:]))
}

var httpClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 256}, Timeout: 60 * time.Second}

// call sends one JSON request; the body is decoded into out when the
// status is 2xx and out is not nil.
func call(method, url string, body, out any) (int, string, error) {
	var rd io.Reader
	if body != nil {
		b, _ := json.Marshal(body)
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, url, rd)
	if err != nil {
		return 0, "", err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := httpClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		return res.StatusCode, "", err
	}
	if res.StatusCode/100 == 2 && out != nil {
		if err := json.Unmarshal(data, out); err != nil {
			return res.StatusCode, string(data), err
		}
	}
	return res.StatusCode, string(data), nil
}

// problemCode is a problem body's code.
func problemCode(body string) string {
	var p struct {
		Code string `json:"code"`
	}
	json.Unmarshal([]byte(body), &p)
	return p.Code
}

// Request kinds of the HTTP load.
type kind int

const (
	kRender      kind = iota // a render for one user
	kAfterWrite              // a render on another replica just after a write
	kTurn                    // a turn on one of the shared sessions
	kAdd                     // add a memory, superseding the client's last one
	kForget                  // forget the client's current memory
	kSessionRead             // read a session's messages
	nKinds
)

var kindNames = [nKinds]string{"render", "render after write (other replica)", "turn", "memory add+supersede", "memory forget", "session read"}

// loadClient is one client; it remembers what was acknowledged.
type loadClient struct {
	id      int
	user    string
	adds    []ackedAdd
	forgot  map[string]bool
	unsure  map[string]bool     // forgets refused in an outage: applied or not
	turns   map[string][]string // session → tags acknowledged, in order
	lat     [nKinds][]time.Duration
	fails   [nKinds]int // 503 store_unavailable (or refused connections)
	bad     []string    // anything else: the test fails
	lagMax  time.Duration
	lagged  int // renders after a write that needed a retry
	current string
}

type ackedAdd struct {
	id, content, supersedes string
}

type loadReport struct {
	elapsed time.Duration
	clients []*loadClient
}

// runHTTPLoad runs perReplica clients per URL for d. Each client sends
// every request to a replica of its choosing; a render after a write goes
// to another replica than the write did.
func runHTTPLoad(t testing.TB, urls []string, perReplica, sessions int, d time.Duration) *loadReport {
	return runHTTPLoadUntil(t, urls, perReplica, sessions, d, nil)
}

// runHTTPLoadUntil is runHTTPLoad that also ends when stop is closed.
func runHTTPLoadUntil(t testing.TB, urls []string, perReplica, sessions int, d time.Duration, stop <-chan struct{}) *loadReport {
	var wg sync.WaitGroup
	n := len(urls) * perReplica
	clients := make([]*loadClient, n)
	start := time.Now()
	deadline := start.Add(d)
	for i := range n {
		c := &loadClient{id: i, user: "u" + strconv.Itoa(i%8), forgot: map[string]bool{}, unsure: map[string]bool{}, turns: map[string][]string{}}
		clients[i] = c
		wg.Add(1)
		go func() {
			defer wg.Done()
			rng := mrand.New(mrand.NewPCG(uint64(i), 17))
			for step := 0; time.Now().Before(deadline) && !closed(stop); step++ {
				home := urls[rng.IntN(len(urls))]
				other := urls[(slices.Index(urls, home)+1+rng.IntN(max(len(urls)-1, 1)))%len(urls)]
				ws := "/v1/workspaces/default"
				switch r := rng.IntN(20); {
				case r < 8:
					c.timed(kRender, func() (int, string, error) {
						return call("POST", home+ws+"/render", map[string]any{"user": c.user}, nil)
					})
				case r < 14:
					sess := "s" + strconv.Itoa(rng.IntN(sessions))
					tag := fmt.Sprintf("tag-%d-%d", c.id, step)
					var out struct {
						Reply string `json:"reply"`
					}
					st, _ := c.timed(kTurn, func() (int, string, error) {
						return call("POST", home+ws+"/sessions/"+sess+"/turns", map[string]any{"message": "please note " + tag, "user": c.user}, &out)
					})
					if st == 200 {
						if out.Reply != "re "+tag {
							c.bad = append(c.bad, fmt.Sprintf("turn %s got reply %q", tag, out.Reply))
						}
						c.turns[sess] = append(c.turns[sess], tag)
					}
				case r < 18 || c.current == "":
					content := fmt.Sprintf("Fact %d-%d of client %d.", c.id, step, c.id)
					var out struct {
						Memories []struct {
							ID string `json:"id"`
						} `json:"memories"`
					}
					st, _ := c.timed(kAdd, func() (int, string, error) {
						return call("POST", home+ws+"/memories", map[string]any{"category": "personal_fact", "content": content, "user": c.user, "supersedes": c.current}, &out)
					})
					if st != 201 || len(out.Memories) != 1 {
						// A write refused in an outage may still have
						// committed (its COMMIT's answer was lost): the
						// client no longer knows whether its last memory
						// was superseded, so it starts a new chain.
						c.current = ""
						continue
					}
					c.adds = append(c.adds, ackedAdd{id: out.Memories[0].ID, content: content, supersedes: c.current})
					c.current = out.Memories[0].ID
					c.renderHas(other+ws+"/render", content)
				default:
					st, _ := c.timed(kForget, func() (int, string, error) {
						return call("DELETE", home+ws+"/memories/"+c.current, nil, nil)
					})
					switch {
					case st == 204:
						c.forgot[c.current] = true
					case st != 404:
						c.unsure[c.current] = true // refused in an outage: maybe applied
					}
					c.current = ""
				}
			}
		}()
	}
	wg.Wait()
	return &loadReport{elapsed: time.Since(start), clients: clients}
}

func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}

// timed sends one request and files its latency; a 503 with code
// store_unavailable (or a refused connection) is an outage, anything else
// unexpected is a failure.
func (c *loadClient) timed(k kind, f func() (int, string, error)) (int, string) {
	start := time.Now()
	st, body, err := f()
	lat := time.Since(start)
	switch {
	case err != nil:
		c.fails[k]++
		return 0, ""
	case st == 503 && problemCode(body) == "store_unavailable":
		c.fails[k]++
	case st/100 != 2:
		c.bad = append(c.bad, fmt.Sprintf("%s: %d %.300s", kindNames[k], st, body))
	default:
		c.lat[k] = append(c.lat[k], lat)
	}
	return st, body
}

// renderHas renders on another replica right after a write and checks the
// write is there, on the first try: the render reads the database's
// change counter, so it does not depend on the NOTIFY having arrived. A
// render refused during an outage (503) is retried.
func (c *loadClient) renderHas(url, content string) {
	first := time.Now()
	for attempt := 0; ; attempt++ {
		var out struct {
			Prompt string `json:"prompt"`
		}
		st, _ := c.timed(kAfterWrite, func() (int, string, error) {
			return call("POST", url, map[string]any{"user": c.user}, &out)
		})
		if st == 200 && strings.Contains(out.Prompt, content) {
			if attempt > 0 {
				c.lagged++
				c.lagMax = max(c.lagMax, time.Since(first))
			}
			return
		}
		if st == 200 {
			c.bad = append(c.bad, fmt.Sprintf("a render on another replica after the write of %q was acknowledged lacks it", content))
			return
		}
		if st != 0 && st != 503 {
			return
		}
		if time.Since(first) > 3*time.Second {
			c.bad = append(c.bad, fmt.Sprintf("a render on another replica lacked %q for %s after the write was acknowledged", content, time.Since(first).Round(time.Millisecond)))
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// check reads the end state through url and checks it against what the
// clients were told.
func (rep *loadReport) check(t testing.TB, url string, sessions int) {
	t.Helper()
	for _, c := range rep.clients {
		for _, b := range c.bad {
			t.Error(b)
		}
	}
	var export struct {
		Memories []struct {
			ID, Content, User string
			SupersededBy      string `json:"superseded_by"`
			Forgotten         bool
		} `json:"memories"`
	}
	if st, body, err := call("GET", url+"/v1/workspaces/default/memories/export", nil, &export); err != nil || st != 200 {
		t.Fatalf("export: %d %v %.300s", st, err, body)
	}
	byID := map[string]int{}
	byContent := map[string]int{}
	for i, m := range export.Memories {
		byID[m.ID] = i
		byContent[m.Content]++
	}
	acked := 0
	for _, c := range rep.clients {
		for j, a := range c.adds {
			acked++
			i, ok := byID[a.id]
			switch {
			case !ok:
				t.Errorf("acknowledged memory %s (%q) is not stored", a.id, a.content)
				continue
			case byContent[a.content] != 1:
				t.Errorf("memory %q is stored %d times", a.content, byContent[a.content])
			}
			m := export.Memories[i]
			if m.Content != a.content || m.User != c.user {
				t.Errorf("memory %s stored as %q for %q", a.id, m.Content, m.User)
			}
			if c.forgot[a.id] != m.Forgotten && !c.unsure[a.id] {
				t.Errorf("memory %s: forgotten %v, acknowledged forget %v", a.id, m.Forgotten, c.forgot[a.id])
			}
			if j+1 < len(c.adds) && c.adds[j+1].supersedes == a.id && m.SupersededBy != c.adds[j+1].id {
				t.Errorf("memory %s: superseded by %q, want %q", a.id, m.SupersededBy, c.adds[j+1].id)
			}
		}
	}
	turns := 0
	for i := range sessions {
		sess := "s" + strconv.Itoa(i)
		var hist struct {
			Messages []struct {
				Role    string          `json:"role"`
				Content json.RawMessage `json:"content"`
			} `json:"messages"`
		}
		if st, body, err := call("GET", url+"/v1/workspaces/default/sessions/"+sess+"/messages", nil, &hist); err != nil || st != 200 {
			t.Fatalf("session %s: %d %v %.300s", sess, st, err, body)
		}
		if len(hist.Messages)%2 != 0 {
			t.Errorf("session %s holds %d messages: a turn is not whole", sess, len(hist.Messages))
		}
		seen := map[string]int{} // tag → its turn's position
		for j := 0; j+1 < len(hist.Messages); j += 2 {
			u, a := hist.Messages[j], hist.Messages[j+1]
			tag := tagRE.FindString(string(u.Content))
			if u.Role != "user" || a.Role != "assistant" || tag == "" || !strings.Contains(string(a.Content), "re "+tag) {
				t.Errorf("session %s messages %d-%d are not one turn: %s %.80s / %s %.80s", sess, j, j+1, u.Role, u.Content, a.Role, a.Content)
				continue
			}
			if _, dup := seen[tag]; dup {
				t.Errorf("session %s holds turn %s twice", sess, tag)
			}
			seen[tag] = j / 2
		}
		for _, c := range rep.clients {
			prev := -1
			for _, tag := range c.turns[sess] {
				turns++
				pos, ok := seen[tag]
				if !ok {
					t.Errorf("acknowledged turn %s is not in session %s", tag, sess)
					continue
				}
				if pos < prev {
					t.Errorf("session %s: client %d's turn %s is before its earlier turn", sess, c.id, tag)
				}
				prev = pos
			}
		}
	}
	t.Logf("checked %d acknowledged memory writes and %d acknowledged turns on %d sessions", acked, turns, sessions)
}

// figures prints throughput and latency per request kind.
func (rep *loadReport) figures(name string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d clients, %.1f s\n", name, len(rep.clients), rep.elapsed.Seconds())
	fmt.Fprintf(&b, "  %-36s %9s %9s %9s %7s\n", "request", "req/s", "p50 ms", "p99 ms", "503s")
	lagged, lagMax := 0, time.Duration(0)
	for k := range nKinds {
		var all []time.Duration
		fails := 0
		for _, c := range rep.clients {
			all = append(all, c.lat[k]...)
			fails += c.fails[k]
		}
		if len(all) == 0 && fails == 0 {
			continue
		}
		slices.Sort(all)
		fmt.Fprintf(&b, "  %-36s %9.1f %9.2f %9.2f %7d\n", kindNames[k], float64(len(all))/rep.elapsed.Seconds(), ms(pct(all, 0.50)), ms(pct(all, 0.99)), fails)
	}
	for _, c := range rep.clients {
		lagged += c.lagged
		lagMax = max(lagMax, c.lagMax)
	}
	fmt.Fprintf(&b, "  renders after a write retried after a 503: %d (longest wait %s)\n", lagged, lagMax.Round(10*time.Microsecond))
	return b.String()
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// Four replicas on one PostgreSQL under HTTP load: every acknowledged
// write stored once, sessions whole and ordered, every render after a
// write on another replica holding it. With LOOM_PG_HTTP_SQLITE=1 the same
// load then runs on one SQLite replica, for the figures.
func TestHTTPReplicas(t *testing.T) {
	env := pgEnv(t)
	model := newFakeModel(t)
	dir := httpWorkspace(t, model.URL)
	d := time.Duration(envInt("LOOM_PG_HTTP_SECONDS", 2)) * time.Second
	per := envInt("LOOM_PG_HTTP_CLIENTS", 4)
	const sessions = 50
	var urls []string
	for range 4 {
		urls = append(urls, startServer(t, dir, env, "--store", "postgres").url)
	}
	rep := runHTTPLoad(t, urls, per, sessions, d)
	rep.check(t, urls[0], sessions)
	out := rep.figures(fmt.Sprintf("PostgreSQL, 4 replicas × %d", per))
	if os.Getenv("LOOM_PG_HTTP_SQLITE") == "1" {
		sdir := httpWorkspace(t, model.URL)
		s := startServer(t, sdir, serverEnv())
		srep := runHTTPLoad(t, []string{s.url}, per, sessions, d)
		srep.check(t, s.url, sessions)
		out += srep.figures(fmt.Sprintf("SQLite, 1 replica × %d", per))
	}
	t.Log("\n" + out)
}

// A PostgreSQL outage in the middle of the load: requests meanwhile fail
// with 503 store_unavailable (nothing else), succeed again once it is back
// without restarting a replica, and nothing acknowledged is lost.
//
// The replicas reach PostgreSQL through a proxy that drops every
// connection and refuses new ones for a second, which is what a restart
// looks like from a replica, without disturbing the other tests that share
// the server. LOOM_PG_HTTP_REAL_RESTART=1 restarts the server itself
// instead (LOOM_TEST_PG_RESTART, from scripts/pg-test.sh): run it alone.
func TestHTTPPostgresRestart(t *testing.T) {
	dsn := testenv.PostgresDSN(t)
	restart := os.Getenv("LOOM_TEST_PG_RESTART")
	real := os.Getenv("LOOM_PG_HTTP_REAL_RESTART") == "1"
	if real && restart == "" {
		testenv.Missing(t, "PostgreSQL restart command", "run under scripts/pg-test.sh, which sets LOOM_TEST_PG_RESTART")
	}
	var p *testenv.PGProxy
	if !real {
		p, dsn = testenv.NewPGProxy(t, dsn)
	}
	env := pgEnvDSN(t, dsn)
	model := newFakeModel(t)
	dir := httpWorkspace(t, model.URL)
	var urls []string
	for range 2 {
		urls = append(urls, startServer(t, dir, env, "--store", "postgres").url)
	}
	const sessions = 8
	stop := make(chan struct{})
	go func() {
		defer close(stop)
		time.Sleep(700 * time.Millisecond)
		if real {
			if out, err := exec.Command("sh", "-c", restart).CombinedOutput(); err != nil {
				t.Errorf("restart: %v\n%s", err, out)
			}
		} else {
			p.Down()
			time.Sleep(time.Second)
			p.Up()
		}
		time.Sleep(time.Second) // load after the outage too
	}()
	rep := runHTTPLoadUntil(t, urls, 3, sessions, 60*time.Second, stop)
	outage := 0
	for _, c := range rep.clients {
		for k := range nKinds {
			outage += c.fails[k]
		}
	}
	if outage == 0 {
		t.Error("no request was refused: the outage was not seen")
	}
	t.Logf("requests refused during the outage: %d\n%s", outage, rep.figures("across an outage"))
	// After it: every kind of request succeeds again, on every replica.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	for _, u := range urls {
		for {
			st, body, err := call("POST", u+"/v1/workspaces/default/memories", map[string]any{"category": "personal_fact", "content": "After the outage " + u, "user": "u0"}, nil)
			if err == nil && st == 201 {
				break
			}
			if err == nil && st != 503 {
				t.Fatalf("after the outage: %d %s", st, body)
			}
			if ctx.Err() != nil {
				t.Fatalf("still failing 20 s after the outage: %d %v %s", st, err, body)
			}
			time.Sleep(100 * time.Millisecond)
		}
		if st, body, _ := call("POST", u+"/v1/workspaces/default/sessions/after/turns", map[string]any{"message": "tag-999-1"}, nil); st != 200 {
			t.Fatalf("turn after the outage: %d %s", st, body)
		}
	}
	rep.check(t, urls[1], sessions)
}

// A replica killed with SIGKILL in the middle of a turn leaves the
// session's lock released (its connection, and the lock with it, is gone)
// and the session readable: another replica's turn on it goes through.
func TestHTTPReplicaKilledMidTurn(t *testing.T) {
	env := pgEnv(t)
	model := newFakeModel(t)
	dir := httpWorkspace(t, model.URL)
	a := startServer(t, dir, env, "--store", "postgres")
	b := startServer(t, dir, env, "--store", "postgres")
	const ws = "/v1/workspaces/default/sessions/shared"
	if st, body, _ := call("POST", a.url+ws+"/turns", map[string]any{"message": "tag-1-1"}, nil); st != 200 {
		t.Fatalf("first turn: %d %s", st, body)
	}
	go call("POST", a.url+ws+"/turns", map[string]any{"message": "tag-1-2 HANG"}, nil)
	select {
	case <-model.hung:
	case <-time.After(20 * time.Second):
		t.Fatal("the turn never reached the model")
	}
	// a holds the session's lock now: b's turn waits for it.
	waiting := make(chan int, 1)
	go func() {
		st, _, _ := call("POST", b.url+ws+"/turns", map[string]any{"message": "tag-2-1"}, nil)
		waiting <- st
	}()
	select {
	case st := <-waiting:
		t.Fatalf("b's turn ended (%d) while a held the session's lock", st)
	case <-time.After(300 * time.Millisecond):
	}
	a.cmd.Process.Kill()
	<-a.done
	select {
	case st := <-waiting:
		if st != 200 {
			t.Fatalf("b's turn after a was killed: %d", st)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("b's turn still waits: the killed replica's lock was not released")
	}
	var hist struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if st, body, _ := call("GET", b.url+ws+"/messages", nil, &hist); st != 200 {
		t.Fatalf("read: %d %s", st, body)
	}
	var tags []string
	for _, m := range hist.Messages {
		tags = append(tags, m.Role+":"+tagRE.FindString(string(m.Content)))
	}
	if got := strings.Join(tags, " "); got != "user:tag-1-1 assistant:tag-1-1 user:tag-2-1 assistant:tag-2-1" {
		t.Fatalf("session after the kill: %s", got)
	}
}
