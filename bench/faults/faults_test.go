package faults

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/loomctx/loom/internal/testenv"
	"github.com/loomctx/loom/session"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testenv.RemoveLoomBinary()
	os.Exit(code)
}

const (
	replicas = 4
	clients  = 16
	sessions = 8 // two clients share each session
)

// duration is how long the clients run: LOOM_FAULTS_DURATION (a Go
// duration), default 12s, the CI form.
func duration(t *testing.T) time.Duration {
	if v := os.Getenv("LOOM_FAULTS_DURATION"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil {
			t.Fatalf("LOOM_FAULTS_DURATION=%q: %v", v, err)
		}
		return d
	}
	return 12 * time.Second
}

// TestFaults runs 16 clients against 4 `loom serve --store postgres`
// replicas through the gateway while the faults below happen, then reads
// the sessions from PostgreSQL and checks that every turn a client saw
// acknowledged is stored exactly once, in the order acknowledged, and that
// every refusal was a 503 with Retry-After (or, on a stream already
// started, the protocol's error event saying store_unavailable). Faults:
// a replica SIGKILLed after the upstream's reply and before the turn is
// stored (the upstream holds the end of that reply until the process is
// dead), a replica SIGSTOPped for 3 s, and PostgreSQL restarted
// (LOOM_TEST_PG_RESTART, which scripts/pg-test.sh exports).
//
//	bash scripts/pg-test.sh go test ./bench/faults -run Faults -v                          # CI form, ~12 s of load
//	LOOM_FAULTS_DURATION=4m LOOM_FAULTS_REAL_RESTART=1 bash scripts/pg-test.sh go test ./bench/faults -run Faults -v -timeout 20m
//
// LOOM_FAULTS_LOOM=/path/to/loom runs another build of loom instead.
func TestFaults(t *testing.T) {
	dsn := testenv.PostgresDSN(t)
	// By default the replicas reach PostgreSQL through a proxy that drops
	// every connection and refuses new ones for a second: what a restart
	// looks like from a replica, without failing the other packages' tests
	// that share the server while `go test ./...` runs them in parallel.
	// LOOM_FAULTS_REAL_RESTART=1 restarts the server itself: run it alone.
	restart := os.Getenv("LOOM_TEST_PG_RESTART")
	real := os.Getenv("LOOM_FAULTS_REAL_RESTART") == "1"
	if real && restart == "" {
		testenv.Missing(t, "postgres-restart", "LOOM_TEST_PG_RESTART is unset; run under scripts/pg-test.sh")
	}
	replicaDSN := dsn
	var proxy *testenv.PGProxy
	if !real {
		proxy, replicaDSN = testenv.NewPGProxy(t, dsn)
	}
	bin := os.Getenv("LOOM_FAULTS_LOOM") // another build to compare, else this tree's
	if bin == "" {
		bin = testenv.LoomBinary(t)
	}
	d := duration(t)
	up := newUpstream(t)
	var b [6]byte
	rand.Read(b[:])
	env := replicaEnv(replicaDSN, "faults/"+hex.EncodeToString(b[:]))

	reps := make([]*replica, replicas)
	for i := range reps {
		reps[i] = startReplica(t, bin, i, up.URL, env)
	}
	var repMu sync.Mutex
	urlOf := func(i int) string { repMu.Lock(); defer repMu.Unlock(); return reps[i].url }

	stats := &tally{}
	ctx, stop := context.WithTimeout(context.Background(), d)
	defer stop()
	var wg sync.WaitGroup
	results := make([][]turn, clients)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[c] = runClient(ctx, c, urlOf, stats)
		}()
	}

	// The faults, at a fifth, two fifths and three fifths of the run.
	step := d / 5
	faultLog := func(format string, args ...any) {
		t.Logf("%6.2fs "+format, append([]any{time.Since(stats.start()).Seconds()}, args...)...)
	}
	time.Sleep(step)
	// SIGKILL between the reply and the save: replica 1's next upstream
	// call sends the reply whole but holds its end; the replica is killed
	// while it waits for it, with the turn not stored.
	armed := up.arm(1)
	select {
	case <-armed:
		reps[1].cmd.Process.Signal(syscall.SIGKILL)
		<-reps[1].done
		faultLog("replica 1 SIGKILLed between the reply and the save")
	case <-time.After(step):
		t.Errorf("replica 1 got no upstream call to fail in %s", step)
	}
	up.disarm()
	next := startReplica(t, bin, 1, up.URL, env)
	repMu.Lock()
	reps[1] = next
	repMu.Unlock()
	faultLog("replica 1 restarted")

	time.Sleep(step / 2)
	reps[2].cmd.Process.Signal(syscall.SIGSTOP)
	faultLog("replica 2 SIGSTOPped")
	time.Sleep(3 * time.Second)
	reps[2].cmd.Process.Signal(syscall.SIGCONT)
	faultLog("replica 2 SIGCONTinued")

	time.Sleep(step / 2)
	faultLog("PostgreSQL restarting")
	if real {
		if out, err := exec.Command("sh", "-c", restart).CombinedOutput(); err != nil {
			t.Errorf("restart PostgreSQL: %v\n%s", err, out)
		}
	} else {
		proxy.Down()
		time.Sleep(time.Second)
		proxy.Up()
	}
	faultLog("PostgreSQL restarted")
	wg.Wait()
	faultLog("clients done")

	stored := loadSessions(t, dsn, env)
	rep := check(results, stored)
	t.Logf("acknowledged turns %d (stream %d), attempts %d; refusals: %d × 503 with Retry-After, %d × stream error event store_unavailable, %d × replica gone (killed, stopped or restarting: no answer), %d × other",
		rep.acked, rep.ackedStream, stats.attempts(), stats.n503, stats.nEvent, stats.nGone, len(stats.other))
	t.Logf("stored turns %d; acknowledged turns lost %d, duplicated %d, out of order %d", rep.stored, len(rep.lost), len(rep.dup), len(rep.order))
	if rep.acked == 0 {
		t.Error("no turn was acknowledged")
	}
	for _, what := range [][]string{rep.lost, rep.dup, rep.order, stats.other} {
		for i, s := range what {
			if i == 10 {
				t.Errorf("... %d more", len(what)-10)
				break
			}
			t.Error(s)
		}
	}
	if t.Failed() {
		for i, r := range reps {
			t.Logf("replica %d log:\n%s", i, r.logTail())
		}
	}
}

// turn is one turn a client sent: its tag, when it was first sent and
// when it was acknowledged.
type turn struct {
	session    int
	tag        string
	sent, acks time.Time
	stream     bool
}

// runClient sends turns until ctx ends, each until it is acknowledged:
// a refused or unanswered attempt is sent again, with the same
// Idempotency-Key, to the next replica.
func runClient(ctx context.Context, c int, urlOf func(int) string, st *tally) []turn {
	sess := c % sessions
	stream := c%2 == 1
	var history []map[string]string
	var done []turn
	rep := c % replicas
	for n := 0; ctx.Err() == nil; n++ {
		tr := turn{session: sess, tag: fmt.Sprintf("c%d-t%d", c, n), sent: time.Now(), stream: stream}
		msgs := append(append([]map[string]string(nil), history...), map[string]string{"role": "user", "content": "turn " + tr.tag})
		body, _ := json.Marshal(map[string]any{"model": "fake", "stream": stream, "messages": msgs})
		// A turn started is followed to its acknowledgement, within a
		// bound past the run's end.
		deadline := time.Now().Add(90 * time.Second)
		for {
			wait, ok := attempt(urlOf(rep), body, sess, tr, st)
			rep = (rep + 1) % replicas
			if ok {
				tr.acks = time.Now()
				done = append(done, tr)
				history = append(history, msgs[len(msgs)-1], map[string]string{"role": "assistant", "content": "re " + tr.tag})
				break
			}
			if time.Now().After(deadline) {
				st.note(fmt.Sprintf("client %d: turn %s not acknowledged in 90 s", c, tr.tag))
				return done
			}
			time.Sleep(wait)
		}
	}
	return done
}

var httpClient = &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}, Timeout: 5 * time.Second}

// attempt sends a turn once; ok says it was acknowledged (200 with the
// reply, and for a stream the reply then data: [DONE]). Otherwise wait is
// how long to wait before the next attempt.
func attempt(url string, body []byte, sess int, tr turn, st *tally) (wait time.Duration, ok bool) {
	st.attempt()
	req, _ := http.NewRequest("POST", url+"/v1/workspaces/agent/chat/completions", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Loom-Session", fmt.Sprintf("s%d", sess))
	req.Header.Set("Idempotency-Key", tr.tag)
	resp, err := httpClient.Do(req)
	if err != nil {
		st.gone()
		return 200 * time.Millisecond, false
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	switch {
	case resp.StatusCode == http.StatusServiceUnavailable:
		ra, convErr := strconv.Atoi(resp.Header.Get("Retry-After"))
		if convErr != nil || ra <= 0 || !bytes.Contains(data, []byte(`"store_unavailable"`)) {
			st.note(fmt.Sprintf("%s: 503 without Retry-After or store_unavailable: Retry-After %q %s", tr.tag, resp.Header.Get("Retry-After"), data))
			return time.Second, false
		}
		st.refused503()
		return time.Duration(ra) * time.Second, false
	case resp.StatusCode != http.StatusOK:
		st.note(fmt.Sprintf("%s: %d %s", tr.tag, resp.StatusCode, data))
		return time.Second, false
	case err != nil:
		st.gone() // the replica died or stopped mid-answer
		return 200 * time.Millisecond, false
	}
	want := "re " + tr.tag
	if !tr.stream {
		var out struct {
			Choices []struct {
				Message struct{ Content string } `json:"message"`
			} `json:"choices"`
		}
		if json.Unmarshal(data, &out) != nil || len(out.Choices) != 1 || out.Choices[0].Message.Content != want {
			st.note(fmt.Sprintf("%s: 200 with an unexpected body %s", tr.tag, data))
			return time.Second, false
		}
		return 0, true
	}
	text, doneSeen, errEvent := readStream(data)
	switch {
	case errEvent != "":
		if !strings.Contains(errEvent, `"store_unavailable"`) {
			st.note(fmt.Sprintf("%s: stream error event %s", tr.tag, errEvent))
			return time.Second, false
		}
		st.refusedEvent()
		return time.Second, false
	case !doneSeen:
		st.gone() // cut before [DONE]: not acknowledged
		return 200 * time.Millisecond, false
	case text != want:
		st.note(fmt.Sprintf("%s: streamed %q, want %q", tr.tag, text, want))
		return time.Second, false
	}
	return 0, true
}

// readStream reads a Chat Completions event stream: the reply's text,
// whether it ended with [DONE], and an error event if there was one.
func readStream(data []byte) (text string, done bool, errEvent string) {
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	var b strings.Builder
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		if line == "[DONE]" {
			done = true
			continue
		}
		var ch struct {
			Error   json.RawMessage `json:"error"`
			Choices []struct {
				Delta struct{ Content string } `json:"delta"`
			} `json:"choices"`
		}
		if json.Unmarshal([]byte(line), &ch) != nil {
			continue
		}
		if ch.Error != nil {
			errEvent = string(ch.Error)
		}
		for _, c := range ch.Choices {
			b.WriteString(c.Delta.Content)
		}
	}
	return b.String(), done, errEvent
}

// tally counts the clients' attempts and how they failed.
type tally struct {
	mu                     sync.Mutex
	t0                     time.Time
	n, n503, nEvent, nGone int
	other                  []string
}

func (s *tally) start() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.t0.IsZero() {
		s.t0 = time.Now()
	}
	return s.t0
}
func (s *tally) attempt()      { s.start(); s.mu.Lock(); s.n++; s.mu.Unlock() }
func (s *tally) attempts() int { s.mu.Lock(); defer s.mu.Unlock(); return s.n }
func (s *tally) refused503()   { s.mu.Lock(); s.n503++; s.mu.Unlock() }
func (s *tally) refusedEvent() { s.mu.Lock(); s.nEvent++; s.mu.Unlock() }
func (s *tally) gone()         { s.mu.Lock(); s.nGone++; s.mu.Unlock() }
func (s *tally) note(msg string) {
	s.mu.Lock()
	s.other = append(s.other, msg)
	s.mu.Unlock()
}

// report is what the stored sessions say about the acknowledged turns.
type report struct {
	acked, ackedStream, stored int
	lost, dup, order           []string
}

// check compares the acknowledged turns with the stored sessions: each
// acknowledged turn stored once, no turn stored twice, and of two
// acknowledged turns of one session, one acknowledged before the other was
// first sent is stored first.
func check(results [][]turn, stored map[int][]string) report {
	var r report
	pos := map[string]int{}
	for s, tags := range stored {
		count := map[string]int{}
		for i, tag := range tags {
			count[tag]++
			if count[tag] == 2 {
				r.dup = append(r.dup, fmt.Sprintf("session s%d: turn %s stored twice", s, tag))
			}
			if _, ok := pos[tag]; !ok {
				pos[tag] = i
			}
			r.stored++
		}
	}
	bySession := map[int][]turn{}
	for _, ts := range results {
		for _, t := range ts {
			r.acked++
			if t.stream {
				r.ackedStream++
			}
			if _, ok := pos[t.tag]; !ok {
				r.lost = append(r.lost, fmt.Sprintf("session s%d: turn %s acknowledged at %s, not stored", t.session, t.tag, t.acks.Format("15:04:05.000")))
				continue
			}
			bySession[t.session] = append(bySession[t.session], t)
		}
	}
	for s, ts := range bySession {
		sort.Slice(ts, func(i, j int) bool { return ts[i].acks.Before(ts[j].acks) })
		for i, a := range ts {
			for _, b := range ts[i+1:] {
				if a.acks.Before(b.sent) && pos[a.tag] > pos[b.tag] {
					r.order = append(r.order, fmt.Sprintf("session s%d: %s acknowledged before %s was sent, stored after it", s, a.tag, b.tag))
				}
			}
		}
	}
	return r
}

var tagRE = regexp.MustCompile(`c[0-9]+-t[0-9]+`)

// loadSessions reads each session's user messages' tags from PostgreSQL,
// as stored.
func loadSessions(t *testing.T, dsn string, env []string) map[int][]string {
	ws := ""
	for _, kv := range env {
		if v, ok := strings.CutPrefix(kv, "LOOM_PG_WORKSPACE="); ok {
			ws = v + "/agent"
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := session.OpenPGStore(ctx, dsn, ws)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	out := map[int][]string{}
	for s := range sessions {
		var state *session.State
		for try := 0; ; try++ { // PostgreSQL may still be coming back
			if state, err = st.Load(ctx, fmt.Sprintf("s%d", s)); err == nil || try == 20 {
				break
			}
			time.Sleep(500 * time.Millisecond)
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range state.Messages {
			if m.Role == "user" {
				out[s] = append(out[s], tagRE.FindString(m.Content.String()))
			}
		}
	}
	return out
}

// upstream is the fake model: it answers "re TAG" to a turn tagged TAG, in
// two chunks when streamed. When armed for a replica, that replica's next
// call gets its whole reply but not its end: the test is told, and the
// call waits until the replica is gone.
type upstream struct {
	*httptest.Server
	mu     sync.Mutex
	armFor int
	fired  chan struct{}
}

func newUpstream(t *testing.T) *upstream {
	u := &upstream{armFor: -1}
	u.Server = httptest.NewServer(http.HandlerFunc(u.handle))
	t.Cleanup(u.Close)
	return u
}

func (u *upstream) arm(rep int) <-chan struct{} {
	u.mu.Lock()
	defer u.mu.Unlock()
	u.armFor, u.fired = rep, make(chan struct{})
	return u.fired
}

func (u *upstream) disarm() {
	u.mu.Lock()
	u.armFor = -1
	u.mu.Unlock()
}

// take reports whether this call, from replica rep, is the armed one.
func (u *upstream) take(rep int) chan struct{} {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.armFor != rep {
		return nil
	}
	u.armFor = -1
	return u.fired
}

func (u *upstream) handle(w http.ResponseWriter, r *http.Request) {
	rep, _ := strconv.Atoi(strings.TrimPrefix(strings.SplitN(r.URL.Path, "/", 3)[1], "r"))
	var body struct {
		Stream   bool `json:"stream"`
		Messages []struct {
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.NewDecoder(io.LimitReader(r.Body, 64<<20)).Decode(&body); err != nil || len(body.Messages) == 0 {
		http.Error(w, "bad request", 400)
		return
	}
	reply := "re " + tagRE.FindString(string(body.Messages[len(body.Messages)-1].Content))
	fired := u.take(rep)
	flush := func() { http.NewResponseController(w).Flush() }
	hold := func() {
		if fired != nil {
			flush()
			close(fired)
			<-r.Context().Done() // the replica is killed while it waits
		}
	}
	if !body.Stream {
		// Chunked, so the replica reads the whole reply but not its end.
		w.Header().Set("Content-Type", "application/json")
		full := fmt.Sprintf(`{"id":"x","object":"chat.completion","model":"fake","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}]}`, reply)
		io.WriteString(w, full[:len(full)-1])
		hold()
		io.WriteString(w, full[len(full)-1:])
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	half := len(reply) / 2
	for _, piece := range []string{reply[:half], reply[half:]} {
		fmt.Fprintf(w, "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"model\":\"fake\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%q},\"finish_reason\":null}]}\n\n", piece)
		flush()
	}
	io.WriteString(w, "data: {\"id\":\"x\",\"object\":\"chat.completion.chunk\",\"model\":\"fake\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\n")
	hold()
	io.WriteString(w, "data: [DONE]\n\n")
}

// replica is one `loom serve --store postgres` process.
type replica struct {
	cmd  *exec.Cmd
	url  string
	done chan struct{}
	mu   sync.Mutex
	log  []string
}

// replicaEnv is the replicas' environment: the test's without the
// operator's model and store settings, the DSN, and one workspace key so
// that the replicas (each with its own folder) share their state.
func replicaEnv(dsn, ws string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "LOOM_LLM_") || strings.HasPrefix(kv, "LOOM_MEMORY_") || strings.HasPrefix(kv, "LOOM_PG_") {
			continue
		}
		env = append(env, kv)
	}
	if !strings.Contains(dsn, "://") {
		dsn += " pool_max_conns=24"
	}
	return append(env, "LOOM_PG_DSN="+dsn, "LOOM_PG_WORKSPACE="+ws, "LOOM_ALLOWED_ENDPOINTS=127.0.0.1")
}

// startReplica starts replica i serving a root with one workspace,
// "agent", whose model is the fake under /r{i}, and waits until it
// listens.
func startReplica(t *testing.T, bin string, i int, upURL string, env []string) *replica {
	t.Helper()
	root := t.TempDir()
	dir := filepath.Join(root, "agent")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	files := map[string]string{
		"AGENTS.md": "# Agent\nAnswer briefly.\n",
		"loom.yaml": fmt.Sprintf("llm:\n  provider: openai\n  base_url: %s/r%d/v1\n  model: fake\n  api_key_env: LOOM_FAULTS_KEY\n  extraction:\n    enabled: false\n  consolidation:\n    enabled: false\n", upURL, i),
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(bin, "serve", "--root", root, "--store", "postgres", "--addr", "127.0.0.1:0", "--log-level", "warn", "--drain-timeout", "2s")
	cmd.Env = append(env, "LOOM_FAULTS_KEY=sk-fake")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	r := &replica{cmd: cmd, done: make(chan struct{})}
	urlc := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			if _, u, ok := strings.Cut(line, "loom: serving on "); ok {
				urlc <- u
			}
			r.mu.Lock()
			if r.log = append(r.log, line); len(r.log) > 200 {
				r.log = r.log[100:]
			}
			r.mu.Unlock()
		}
	}()
	go func() { cmd.Wait(); close(r.done) }()
	select {
	case r.url = <-urlc:
	case <-r.done:
		t.Fatalf("replica %d exited before listening:\n%s", i, r.logTail())
	case <-time.After(60 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("replica %d did not start:\n%s", i, r.logTail())
	}
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGCONT)
		cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-r.done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-r.done
		}
	})
	return r
}

func (r *replica) logTail() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return strings.Join(r.log, "\n")
}
