package skills

import (
	"fmt"
	"math/rand/v2"
	"path"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/loomctx/loom/md"
)

// memoVariants are the texts a skill is edited to: each changes what the
// summary or the Active Skills section shows of it, or whether it is in
// one at all (available or not, always-on or not, broken).
var memoVariants = []func(name string, n int) string{
	func(name string, n int) string { return skillMD(name, fmt.Sprintf("Edit %d.", n)) },
	func(name string, n int) string {
		return skillMD(name, fmt.Sprintf("Needs a program, edit %d.", n), `metadata: {"nanobot":{"requires":{"bins":["loom-no-such-program"]}}}`+"\n")
	},
	func(name string, n int) string {
		return skillMD(name, fmt.Sprintf("Always on, edit %d.", n), "always: true\n")
	},
	func(name string, n int) string {
		return skillMD(name, fmt.Sprintf("Always on but unavailable, edit %d.", n), "always: true\n", `metadata: {"nanobot":{"requires":{"env":["LOOM_NO_SUCH_VARIABLE"]}}}`+"\n")
	},
	func(name string, n int) string { return "---\nname: [\n---\n" },
}

// TestMemoSectionsMatchFreshOnes edits random skills of a watched workspace
// again and again, one or two at a time, and after each edit renders the
// summary, the analyst's listing and the Active Skills section with the
// memos a Builder keeps
// (so that a patched Set changes the last ones in place) and without any:
// the two must be the same text, with the same budget priorities.
func TestMemoSectionsMatchFreshOnes(t *testing.T) {
	dir := t.TempDir()
	const n = 12
	name := func(i int) string { return fmt.Sprintf("s%02d", i) }
	files := map[string]string{}
	for i := range n {
		files["skills/"+name(i)+"/SKILL.md"] = memoVariants[i%len(memoVariants)](name(i), 0)
	}
	writeFiles(t, dir, files)
	ws := openWS(t, dir)
	if err := ws.Watch(); err != nil {
		t.Fatal(err)
	}
	l := New(ws, Options{NoBuiltins: true})
	entries, listEntries, active, xml := &EntryMemo{}, &EntryMemo{}, &ActiveMemo{}, md.NewXMLMemo()
	memoOpts := PromptOptions{Priority: 1000, Entries: entries, ActiveMemo: active, XMLMemo: xml, Unbudgeted: true}
	plainOpts := PromptOptions{Priority: 1000, Unbudgeted: true}
	tree := func(s *Set, o PromptOptions) md.Node {
		lo := PromptOptions{Priority: 500}
		if o.Entries != nil {
			lo.Entries = listEntries
		}
		return md.Doc(s.Active(o), s.Summary(o), s.Listing(lo))
	}
	sections := func(s *Set, o PromptOptions) string { return md.String(tree(s, o)) }
	// The report names every scope with its priority.
	report := func(s *Set, o PromptOptions) string {
		r, err := md.NewRenderer().Render(tree(s, o))
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		for _, e := range r.Report.Sections() {
			prio := "none"
			if e.Priority != nil {
				prio = fmt.Sprint(*e.Priority)
			}
			fmt.Fprintf(&b, "%s %s %s %v;", e.Name, prio, e.Status, e.Sources)
		}
		return b.String()
	}
	set := l.Load()
	if got, want := sections(set, memoOpts), sections(set, plainOpts); got != want {
		t.Fatalf("first render differs:\n%s\n---\n%s", got, want)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	patched := 0
	for step := 1; step <= 200; step++ {
		edits := map[string]string{}
		for range 1 + rng.IntN(2) {
			i := rng.IntN(n)
			edits["skills/"+name(i)+"/SKILL.md"] = memoVariants[rng.IntN(len(memoVariants))](name(i), step)
		}
		writeFiles(t, dir, edits)
		want := New(openWS(t, dir), Options{NoBuiltins: true}).Load()
		deadline := time.Now().Add(10 * time.Second)
		for set = l.Load(); !reflect.DeepEqual(set.Skills, want.Skills); set = l.Load() {
			if time.Now().After(deadline) {
				t.Fatalf("step %d: the watched load never caught up with the edit", step)
			}
			time.Sleep(5 * time.Millisecond)
		}
		if set.from != 0 {
			patched++
		}
		if got, fresh := sections(set, memoOpts), sections(want, plainOpts); got != fresh {
			t.Fatalf("step %d: sections from the memos differ from fresh ones:\n%s\n---\n%s", step, got, fresh)
		}
		if got, fresh := report(set, memoOpts), report(want, plainOpts); got != fresh {
			t.Fatalf("step %d: report from the memos differs:\n%s\n---\n%s", step, got, fresh)
		}
	}
	if patched < 50 {
		t.Fatalf("only %d of 200 loads made a patched Set; the test does not cover the memos' patch path", patched)
	}
}

// TestSummaryEntryIsTheNodesOneByOne checks that summaryEntry's one-block
// entry is the very tree that making each node on its own gives, for every
// shape an entry takes (inline or not, available or not, no description).
func TestSummaryEntryIsTheNodesOneByOne(t *testing.T) {
	oneByOne := func(sk *Skill, prio int) *md.Scope {
		children := []md.Node{
			md.XML("name", nil, md.Text(sk.Name)),
			md.XML("description", nil, md.Text(describe(sk))),
		}
		if sk.Inline {
			children = append(children, md.XML("content", nil, md.Text(sk.Body)))
		} else {
			children = append(children, md.XML("location", nil, md.Text(sk.Location)))
		}
		if !sk.Available {
			children = append(children, md.XML("requires", nil, md.Text(sk.MissingText())))
		}
		avail := "false"
		if sk.Available {
			avail = "true"
		}
		return md.Named("skill:"+sk.Name, md.XML("skill", []md.Attr{{Name: "available", Value: avail}}, children...)).Prio(prio).From(sk.Path)
	}
	for _, inline := range []bool{false, true} {
		for _, avail := range []bool{false, true} {
			for _, desc := range []string{"", "Does <things> & more."} {
				sk := &Skill{Name: "a&b", Path: "skills/a&b/SKILL.md", Location: "/ws/skills/a&b/SKILL.md", Inline: inline,
					Body: "Body\nlines.", Available: avail, Frontmatter: Frontmatter{Description: desc}}
				if !avail {
					sk.Missing = []string{"CLI: x", "ENV: Y"}
				}
				got, want := summaryEntry(sk, 42), oneByOne(sk, 42)
				if !reflect.DeepEqual(got, want) {
					t.Errorf("inline=%v available=%v description=%q: the entries differ:\n%#v\n%#v", inline, avail, desc, got, want)
				}
				if md.String(got) != md.String(want) {
					t.Errorf("inline=%v available=%v description=%q: the texts differ", inline, avail, desc)
				}
			}
		}
	}
}

func TestJoinRelIsPathJoin(t *testing.T) {
	for _, dir := range []string{"skills", "agent/skills", "builtin", "a/b/c", "", ".", "x/"} {
		for _, name := range []string{"pdf", "a b", "x.md", "-", "ünï"} {
			for _, file := range []string{"", FileName} {
				if got, want := joinRel(dir, name, file), path.Join(dir, name, file); got != want {
					t.Errorf("joinRel(%q, %q, %q) = %q, path.Join gives %q", dir, name, file, got, want)
				}
			}
		}
	}
}

// TestCheckerSameAgreesWithMissing checks same against slices.Equal of
// missing, for requirements met and unmet, and for lists that differ by
// one entry, one prefix or one length.
func TestCheckerSameAgreesWithMissing(t *testing.T) {
	o := env([]string{"git", "gh"}, map[string]string{"TOKEN": "x"}, "linux")
	chk := &checker{lookPath: o.LookPath, getenv: o.Getenv, goos: o.GOOS, bins: map[string]bool{}}
	fms := []Frontmatter{
		{},
		{Requires: Requires{Bins: []string{"git", "tmux"}}},
		{Requires: Requires{Bins: []string{"nope", "gh", "also-nope"}, Env: []string{"TOKEN", "KEY"}}},
		{Requires: Requires{Env: []string{"KEY"}}, OS: []string{"darwin", "windows"}},
		{OS: []string{"Linux"}},
	}
	candidates := [][]string{nil, {}, {"CLI: tmux"}, {"CLI: tmu"}, {"ENV: tmux"}, {"CLI: tmux", "ENV: KEY"},
		{"CLI: nope", "CLI: also-nope", "ENV: KEY"}, {"CLI: nope", "CLI: also-nope"}, {"ENV: KEY", "OS: darwin or windows"},
		{"ENV: KEY", "OS: darwin"}, {"CLI: nope", "CLI: also-nope", "ENV: KEY", "ENV: KEY"}}
	for i := range fms {
		fm := &fms[i]
		want := chk.missing(fm)
		if !chk.same(fm, want) {
			t.Errorf("%+v: same(missing()) is false", fm.Requires)
		}
		for _, c := range candidates {
			if got, eq := chk.same(fm, c), reflect.DeepEqual(want, c) || (len(want) == 0 && len(c) == 0); got != eq {
				t.Errorf("%+v: same(%q) = %v, missing() is %q", fm.Requires, c, got, want)
			}
		}
	}
}
