package skills

import (
	"fmt"
	"strings"
	"testing"

	"github.com/loomctx/loom/internal/golden"
	"github.com/loomctx/loom/md"
)

var promptFiles = map[string]string{
	"skills/pdf/SKILL.md":   skillMD("pdf", `Read <PDF> & "split" 'em`),
	"skills/tmux/SKILL.md":  "---\nname: tmux\ndescription: Drive tmux.\nmetadata: {\"nanobot\":{\"requires\":{\"bins\":[\"tmux\"],\"env\":[\"TOK\"]}}}\n---\nbody",
	"skills/mem/SKILL.md":   "---\nname: mem\ndescription: Memory.\nalways: true\n---\nRemember things.\n\n---\n\nA rule inside the body.",
	"skills/off/SKILL.md":   "---\nname: off\ndescription: Always, but unavailable.\nalways: true\nmetadata: {\"nanobot\":{\"requires\":{\"bins\":[\"nope\"]}}}\n---\nnever active",
	"skills/ro/SKILL.md":    "---\nname: ro\ndescription: Also always.\nalways: true\n---\nSecond body.",
	"skills/bad/SKILL.md":   "---\nname: [\n---\n",
	"agent/skills/churn.md": "---\nname: churn\ndescription: How to compute churn\n---\nsteps",
	"skills/a&b/SKILL.md":   "---\nname: a&b\ndescription: x\n---\nb",
}

func promptSet(t *testing.T) *Set {
	return load(t, promptFiles, noBuiltins(env(nil, nil, "linux")))
}

func TestPromptGolden(t *testing.T) {
	set := promptSet(t)
	golden.Check(t, "assistant", []byte(md.String(md.Doc(set.Active(PromptOptions{}), set.Summary(PromptOptions{})))))
	golden.Check(t, "analyst", []byte(md.String(set.Listing(PromptOptions{}))))

	out := md.String(set.Summary(PromptOptions{}))
	for _, want := range []string{
		"<description>Read &lt;PDF&gt; &amp; &quot;split&quot; &apos;em</description>",
		"<location>skills/a&amp;b/SKILL.md</location>",
		"<requires>CLI: tmux, ENV: TOK</requires>",
		"<skill available=\"false\">\n    <name>off</name>", // unavailable always-on stays in the summary
	} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q", want)
		}
	}
	for _, absent := range []string{"<name>mem</name>", "<name>ro</name>", "<name>bad</name>"} {
		if strings.Contains(out, absent) {
			t.Errorf("summary should not list %s", absent)
		}
	}
}

func TestPromptEmpty(t *testing.T) {
	set := load(t, nil, noBuiltins(env(nil, nil, "linux")))
	if set.Summary(PromptOptions{}) != nil || set.Listing(PromptOptions{}) != nil || set.Active(PromptOptions{}) != nil {
		t.Error("an empty set should give no sections")
	}
}

func TestSummaryBudgetDropsFromEnd(t *testing.T) {
	files := map[string]string{}
	for i := range 10 {
		n := "s" + itoa(i)
		files["skills/"+n+"/SKILL.md"] = skillMD(n, "one two three four five")
	}
	set := load(t, files, noBuiltins(env(nil, nil, "linux")))
	tree := md.Doc(md.Raw("HEAD"), set.Summary(PromptOptions{Priority: 100}))
	full, err := md.NewRenderer(md.WithCounter(wordCounter{})).Render(tree)
	if err != nil {
		t.Fatal(err)
	}
	n := wordCounter{}.Count(full.Text)
	res, err := md.NewRenderer(md.WithCounter(wordCounter{}), md.WithBudget(n-20)).Render(tree)
	if err != nil {
		t.Fatal(err)
	}
	for _, kept := range []string{"<name>s00</name>", "<name>s05</name>"} {
		if !strings.Contains(res.Text, kept) {
			t.Errorf("dropped %s", kept)
		}
	}
	if strings.Contains(res.Text, "<name>s09</name>") {
		t.Error("the last entry should go first")
	}
	var dropped []string
	for _, e := range res.Report.Sections() {
		if e.Status == md.Dropped {
			dropped = append(dropped, e.Name)
		}
	}
	if len(dropped) == 0 || dropped[len(dropped)-1] != "skill:s09" {
		t.Fatalf("dropped %q", dropped)
	}
	for i, d := range dropped {
		if want := "skill:s" + itoa(10-len(dropped)+i); d != want {
			t.Errorf("dropped %q, want a tail run ending in s09", dropped)
			break
		}
	}
	if len(dropped) < 2 || len(dropped) > 9 {
		t.Fatalf("budget should drop a few entries, dropped %d", len(dropped))
	}
	notice := fmt.Sprintf("%d more skills are not listed here to save space; see the skill files under skills/.", len(dropped))
	if !strings.Contains(res.Text, "</skills>\n\n"+notice) {
		t.Errorf("notice missing or misplaced:\n%s", res.Text)
	}
}

func TestExpand(t *testing.T) {
	set := promptSet(t)
	got, uses := set.Expand("please /pdf this, then $churn (and /pdf again); /nope /usr/bin $HOME a/pdf /bad", 0)
	want := "<skill_content name=\"pdf\" location=\"skills/pdf/SKILL.md\">\n# pdf\n\nDo the pdf thing.\n</skill_content>\n\n" +
		"<skill_content name=\"churn\" location=\"agent/skills/churn.md\">\nsteps\n</skill_content>\n\n" +
		"please /pdf this, then $churn (and /pdf again); /nope /usr/bin $HOME a/pdf /bad"
	if got != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
	if len(uses) != 2 || uses[0] != (Use{Name: "pdf", Ref: "/pdf", Path: "skills/pdf/SKILL.md", Chars: 24}) || uses[1].Ref != "$churn" {
		t.Errorf("uses %+v", uses)
	}
	if got, uses := set.Expand("nothing here /nope", 0); got != "nothing here /nope" || uses != nil {
		t.Errorf("unknown names: %q %v", got, uses)
	}
}

func TestExpandCutsMiddle(t *testing.T) {
	var b strings.Builder
	for i := range 2000 {
		b.WriteString("line " + itoa(i%100) + " of the long skill body\n")
	}
	body := strings.TrimSpace(b.String())
	set := load(t, map[string]string{"skills/big/SKILL.md": "---\nname: big\ndescription: d\n---\nHEAD-MARK\n" + body + "\nTAIL-MARK"}, noBuiltins(env(nil, nil, "linux")))
	got, uses := set.Expand("/big", 1000)
	if len(uses) != 1 || uses[0].Cut == 0 {
		t.Fatalf("uses %+v", uses)
	}
	inner := strings.TrimSuffix(strings.SplitN(got, "\n", 2)[1], "\n</skill_content>\n\n/big")
	if n := len([]rune(inner)); n > 1000 {
		t.Errorf("expanded body is %d characters, over the cap", n)
	}
	if !strings.HasPrefix(inner, "HEAD-MARK\n") || !strings.HasSuffix(inner, "TAIL-MARK") {
		t.Error("head or tail lost")
	}
	if !strings.Contains(inner, "characters of this skill were left out here") || !strings.Contains(inner, "skills/big/SKILL.md") {
		t.Errorf("no marker:\n%s", inner)
	}
	if uses[0].Chars-uses[0].Cut+len([]rune("x")) > 1000+200 {
		t.Errorf("cut too little: %+v", uses[0])
	}
	// Default cap.
	_, uses = set.Expand("/big", 0)
	if uses[0].Chars <= DefaultMaxExpand || uses[0].Cut == 0 {
		t.Errorf("default cap not applied: %+v", uses[0])
	}
}
