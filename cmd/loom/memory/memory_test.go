package memory

import (
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loomctx/loom/cmd/loom/cmdutil"
	"github.com/loomctx/loom/memory"
)

// run executes `loom memory args...` with a fixed clock that advances a
// minute per memory.
func run(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ios, _, out, errOut := cmdutil.Test()
	now := memory.WithNow(ticker())
	cmd := NewCmdMemory(ios, func(name string, o *Options) error {
		o.Now = now
		switch name {
		case "add":
			return addRun(o)
		case "list":
			return listRun(o)
		case "search":
			return searchRun(o)
		case "forget":
			return forgetRun(o)
		case "import":
			return importRun(o)
		case "export":
			return exportRun(o)
		}
		t.Fatalf("unknown subcommand %s", name)
		return nil
	})
	cmd.SetArgs(args)
	cmd.SetOut(out)
	cmd.SetErr(errOut)
	cmd.SilenceUsage = true
	cmd.SilenceErrors = true
	err = cmd.Execute()
	return out.String(), errOut.String(), err
}

var clockBase = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)

// ticker is a clock shared by every run of a test, so that memories added
// by separate commands get increasing times.
func ticker() func() time.Time {
	return func() time.Time {
		clockBase = clockBase.Add(time.Minute)
		return clockBase
	}
}

func mustRun(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, err := run(t, args...)
	if err != nil {
		t.Fatalf("loom memory %s: %v\n%s", strings.Join(args, " "), err, errOut)
	}
	return out
}

func TestAddListForget(t *testing.T) {
	ws := t.TempDir()
	id1 := strings.TrimSpace(mustRun(t, "add", "-w", ws, "Respond", "in", "French"))
	if !strings.HasPrefix(id1, "m_") {
		t.Fatalf("add printed %q, want an id", id1)
	}
	mustRun(t, "add", "-w", ws, "--category", "personal_fact", "--user", "alex", "--chat", "c1", "The user is  Alex")
	id3 := strings.TrimSpace(mustRun(t, "add", "-w", ws, "--supersedes", id1, "Respond in German"))

	out := mustRun(t, "list", "-w", ws)
	// Stored as typed, white space collapsed: no full stop added (#31).
	if strings.Contains(out, "French") || !strings.Contains(out, "Respond in German\n") || !strings.Contains(out, "The user is Alex\n") {
		t.Errorf("list:\n%s", out)
	}
	if !strings.Contains(out, "user=alex  chat=c1") {
		t.Errorf("list does not show scope and chat:\n%s", out)
	}
	if i, j := strings.Index(out, "German"), strings.Index(out, "Alex"); i > j {
		t.Errorf("list is not newest first:\n%s", out)
	}

	mustRun(t, "forget", "-w", ws, id3)
	out = mustRun(t, "list", "-w", ws, "--all")
	for _, want := range []string{"Respond in French\n", "(superseded by " + id3 + ")", "Respond in German\n", "(forgotten)"} {
		if !strings.Contains(out, want) {
			t.Errorf("list --all lacks %q:\n%s", want, out)
		}
	}

	var ms []memory.Memory
	if err := json.Unmarshal([]byte(mustRun(t, "list", "-w", ws, "--json", "--user", "bob")), &ms); err != nil {
		t.Fatal(err)
	}
	if len(ms) != 0 {
		t.Errorf("bob sees %d active memories, want 0 (the workspace-wide ones are superseded or forgotten)", len(ms))
	}
	json.Unmarshal([]byte(mustRun(t, "list", "-w", ws, "--json", "--user", "alex")), &ms)
	if len(ms) != 1 || ms[0].Content != "The user is Alex" || ms[0].User != "alex" || ms[0].Chat != "c1" {
		t.Errorf("alex's memories: %+v", ms)
	}
}

func TestAddErrors(t *testing.T) {
	ws := t.TempDir()
	_, _, err := run(t, "add", "-w", ws, "--category", "hobby", "Likes chess")
	var fe *cmdutil.FlagError
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), "valid: global_rule, personal_fact") {
		t.Errorf("unknown category: err = %v", err)
	}
	if _, _, err := run(t, "add", "-w", ws, "--supersedes", "m_000000000000", "x"); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("unknown supersedes: err = %v", err)
	}
	if _, _, err := run(t, "add", "-w", ws, strings.Repeat("long ", 1<<20/5)); err == nil || !strings.Contains(err.Error(), "limit") {
		t.Errorf("1 MB memory: err = %v", err)
	}
	if _, _, err := run(t, "forget", "-w", ws, "m_nope"); !errors.Is(err, memory.ErrNotFound) {
		t.Errorf("forget unknown: err = %v", err)
	}
	out := mustRun(t, "list", "-w", ws, "--all")
	if out != "" {
		t.Errorf("failed adds left memories:\n%s", out)
	}
	if _, _, err := run(t, "list", "-w", filepath.Join(ws, "missing")); err == nil {
		t.Error("list in a missing folder succeeded")
	}
}

func TestConfiguredCategories(t *testing.T) {
	ws := t.TempDir()
	yaml := "memory:\n  categories:\n    - name: team_rule\n      label: Team Rules\n    - name: personal_fact\n      label: User Profile\n"
	if err := os.WriteFile(filepath.Join(ws, "loom.yaml"), []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "add", "-w", ws, "Use the staging warehouse")
	var ms []memory.Memory
	json.Unmarshal([]byte(mustRun(t, "list", "-w", ws, "--json")), &ms)
	if len(ms) != 1 || ms[0].Category != "team_rule" {
		t.Errorf("default category is not loom.yaml's first: %+v", ms)
	}
	_, _, err := run(t, "add", "-w", ws, "--category", "global_rule", "x")
	if err == nil || !strings.Contains(err.Error(), "valid: team_rule, personal_fact") {
		t.Errorf("category outside loom.yaml's list: err = %v", err)
	}
}

func TestExportImportRoundTrip(t *testing.T) {
	src := t.TempDir()
	a := strings.TrimSpace(mustRun(t, "add", "-w", src, "Use <b>bold</b> & co"))
	mustRun(t, "add", "-w", src, "--supersedes", a, "--chat", "c9", "Use italics")
	mustRun(t, "add", "-w", src, "--category", "personal_fact", "--user", "u1", "The user is Ana")
	b := strings.TrimSpace(mustRun(t, "add", "-w", src, "--category", "personal_fact", "Zürich, 東京 🚀"))
	mustRun(t, "forget", "-w", src, b)
	exported := mustRun(t, "export", "-w", src)
	lines := strings.Split(strings.TrimSuffix(exported, "\n"), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[0], `{"id":"`+a+`","category":"global_rule","content":"Use <b>bold</b> & co","created_at":"2026-`) {
		t.Fatalf("export:\n%s", exported)
	}
	if !strings.HasSuffix(lines[3], `"forgotten":true}`) {
		t.Errorf("forgotten memory exported as %s", lines[3])
	}
	file := filepath.Join(t.TempDir(), "m.jsonl")
	os.WriteFile(file, []byte(exported), 0o644)
	dst := t.TempDir()
	_, errOut, err := run(t, "import", "-w", dst, file)
	if err != nil || !strings.Contains(errOut, "imported 4 memories") {
		t.Fatalf("import: %v %s", err, errOut)
	}
	if again := mustRun(t, "export", "-w", dst); again != exported {
		t.Errorf("export after import differs:\n%s\nwant\n%s", again, exported)
	}
	// Importing the same file again clashes on ids and adds nothing.
	_, _, err = run(t, "import", "-w", dst, file)
	if err == nil || !strings.Contains(err.Error(), file+":1:") || !strings.Contains(err.Error(), "already exists") {
		t.Errorf("second import: err = %v", err)
	}
	if got := mustRun(t, "export", "-w", dst); got != exported {
		t.Errorf("failed import changed the store")
	}
}

// badLines are import files' faults: a line, after a good memory and an
// empty line, and the error that names it.
type badLine struct{ name, line, want string }

const goodLine = `{"id":"a","category":"global_rule","content":"One","created_at":"2025-01-01T00:00:00Z"}`

func badLines() []badLine {
	return []badLine{
		{"json", `{"id":"b",`, "m.jsonl:3: unexpected EOF"},
		{"unknown key", `{"id":"b","category":"global_rule","content":"x","colour":"red"}`, `m.jsonl:3: json: unknown field "colour"`},
		{"two values", `{"id":"b","category":"global_rule","content":"x"} {}`, "m.jsonl:3: more than one JSON value"},
		{"time", `{"id":"b","category":"global_rule","content":"x","created_at":"yesterday"}`, `m.jsonl:3: created_at "yesterday"`},
		{"category", `{"id":"b","category":"hobby","content":"x"}`, `m.jsonl:3: memory "b": unknown memory category "hobby" (valid: global_rule, personal_fact)`},
		{"empty", `{"id":"b","category":"global_rule","content":"  "}`, `m.jsonl:3: memory "b": memory content is empty`},
		{"duplicate", `{"id":"a","category":"global_rule","content":"x"}`, `m.jsonl:3: memory "a": id appears twice`},
		{"dangling", `{"id":"b","category":"global_rule","content":"x","superseded_by":"zz"}`, `m.jsonl:3: memory "b": superseded_by "zz": no such memory`},
		{"year 10000", `{"id":"b","category":"global_rule","content":"x","created_at":"10000-01-01T00:00:00Z"}`, `m.jsonl:3: created_at "10000-01-01T00:00:00Z" is not an RFC 3339 time`},
		{"zero time", `{"id":"b","category":"global_rule","content":"x","created_at":"0001-01-01T00:00:00Z"}`, `m.jsonl:3: created_at "0001-01-01T00:00:00Z" is Go's zero time`},
		{"self", `{"id":"b","category":"global_rule","content":"x","superseded_by":"b"}`, `m.jsonl:3: memory "b": superseded_by names the memory itself: supersede cycle`},
		{"loop", `{"id":"b","category":"global_rule","content":"x","superseded_by":"c"}` + "\n" + `{"id":"c","category":"global_rule","content":"y","superseded_by":"b"}`, `m.jsonl:3: memory "b": superseded_by links loop (b → c → b): supersede cycle`},
		{"scope", `{"id":"b","category":"global_rule","content":"x","superseded_by":"c"}` + "\n" + `{"id":"c","category":"global_rule","content":"y","user":"u1"}`, `m.jsonl:3: memory "b": memory "b" is workspace-wide: only a workspace-wide memory (no user) may supersede it, not one for user "u1"`},
		{"too long", `{"id":"b","category":"global_rule","content":"` + strings.Repeat("x", 1<<20) + `"}`, `m.jsonl:3: memory "b": memory content is 1048576 bytes; the limit is 65536`},
	}
}

func TestImportBadLines(t *testing.T) {
	for _, tt := range badLines() {
		t.Run(tt.name, func(t *testing.T) {
			ws := t.TempDir()
			file := filepath.Join(t.TempDir(), "m.jsonl")
			os.WriteFile(file, []byte(goodLine+"\n\n"+tt.line+"\n"), 0o644)
			_, _, err := run(t, "import", "-w", ws, file)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v\nwant it to contain %s", err, tt.want)
			}
			if out := mustRun(t, "export", "-w", ws); out != "" {
				t.Errorf("a failed import left memories:\n%s", out)
			}
		})
	}
}

// TestImportBenchFile imports the memories.jsonl that the shared benchmark
// generator writes for a large workspace (a copy under testdata/, see its
// README): all 2,000 lines, whole.
func TestImportBenchFile(t *testing.T) {
	gz, err := os.Open(filepath.Join("testdata", "bench-memories.jsonl.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer gz.Close()
	zr, err := gzip.NewReader(gz)
	if err != nil {
		t.Fatal(err)
	}
	data, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	ws := filepath.Join(t.TempDir(), "ws")
	if err := os.MkdirAll(ws, 0o755); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(ws, "memories.jsonl")
	if err := os.WriteFile(file, data, 0o644); err != nil {
		t.Fatal(err)
	}
	var want []map[string]string
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var m map[string]string
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatal(err)
		}
		want = append(want, m)
	}
	if len(want) != 2000 {
		t.Fatalf("generator wrote %d memories, want 2000", len(want))
	}
	if _, errOut, err := run(t, "import", "-w", ws, file); err != nil {
		t.Fatalf("import: %v %s", err, errOut)
	}
	exported := strings.Split(strings.TrimSpace(mustRun(t, "export", "-w", ws)), "\n")
	if len(exported) != len(want) {
		t.Fatalf("exported %d memories, want %d", len(exported), len(want))
	}
	// Export is oldest first, the generator's order: compare line by line.
	for i, line := range exported {
		var got map[string]any
		json.Unmarshal([]byte(line), &got)
		w := want[i]
		content, _ := memory.Normalize(w["content"])
		if got["id"] != w["id"] || got["category"] != w["category"] || got["content"] != content || got["created_at"] != w["created_at"] {
			t.Fatalf("line %d: got %v, want %v", i+1, got, w)
		}
	}
}

// Times far from today round-trip through export and import exactly.
func TestImportOldAndFarTimes(t *testing.T) {
	lines := []string{
		`{"id":"a","category":"global_rule","content":"Old.","created_at":"1600-01-01T00:00:00Z","user":"","chat":"","superseded_by":""}`,
		`{"id":"b","category":"global_rule","content":"Before 1678.","created_at":"1677-01-01T12:00:00.000000001Z","user":"","chat":"","superseded_by":""}`,
		`{"id":"c","category":"global_rule","content":"After 2262.","created_at":"2263-01-01T00:00:00Z","user":"","chat":"","superseded_by":""}`,
		`{"id":"d","category":"global_rule","content":"Far.","created_at":"9999-12-31T23:59:59.999999999Z","user":"","chat":"","superseded_by":""}`,
	}
	in := strings.Join(lines, "\n") + "\n"
	file := filepath.Join(t.TempDir(), "m.jsonl")
	os.WriteFile(file, []byte(in), 0o644)
	ws := t.TempDir()
	if _, errOut, err := run(t, "import", "-w", ws, file); err != nil {
		t.Fatalf("import: %v %s", err, errOut)
	}
	if out := mustRun(t, "export", "-w", ws); out != in {
		t.Errorf("export:\n%s\nwant\n%s", out, in)
	}
}

func TestImportFileBounds(t *testing.T) {
	ws := t.TempDir()
	big := filepath.Join(t.TempDir(), "big.jsonl")
	f, err := os.Create(big)
	if err != nil {
		t.Fatal(err)
	}
	// A line past the per-line bound fails naming its line, after one
	// bound's worth of reading; the file as a whole has no bound.
	good := `{"id":"a","category":"global_rule","content":"One","created_at":"2025-01-01T00:00:00Z"}` + "\n\n"
	f.WriteString(good)
	f.Truncate(int64(len(good)) + maxImportLine + 1)
	f.Close()
	_, _, err = run(t, "import", "-w", ws, big)
	if err == nil || !strings.Contains(err.Error(), "big.jsonl:3: line longer than") {
		t.Errorf("oversized line: err = %v", err)
	}
	if out := mustRun(t, "export", "-w", ws); out != "" {
		t.Errorf("a failed import left %q", out)
	}
}

// A .loom that is a symlink out of the workspace is refused: the database
// is not created, nor read, through it.
func TestDatabaseThroughTheDoor(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	if err := os.Symlink(outside, filepath.Join(ws, ".loom")); err != nil {
		t.Skip(err)
	}
	if _, _, err := run(t, "add", "-w", ws, "x"); err == nil {
		t.Errorf("add through a symlinked .loom succeeded")
	}
	if _, _, err := run(t, "list", "-w", ws); err == nil {
		t.Errorf("list through a symlinked .loom succeeded")
	}
	if entries, _ := os.ReadDir(outside); len(entries) != 0 {
		t.Errorf("files created outside the workspace: %v", entries)
	}
}
