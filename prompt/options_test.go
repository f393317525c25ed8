package prompt_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/loomctx/loom/prompt"
	"github.com/loomctx/loom/workspace"
)

// TestSameOptionsSeesEveryField changes each field of Options in turn, found
// by reflection so that a field added later is covered too, and checks
// that the change makes the options different: a field the comparison
// missed would hand out a result rendered for other options.
func TestSameOptionsSeesEveryField(t *testing.T) {
	base := prompt.Options{Fork: &prompt.Fork{Title: "t"}, Tools: []string{"a"}, Now: time.Unix(100, 0).UTC()}
	if !prompt.SameOptions(base, base) {
		t.Fatal("options differ from themselves")
	}
	copied := base
	copied.Fork = &prompt.Fork{Title: "t"}
	copied.Tools = []string{"a"}
	if !prompt.SameOptions(base, copied) {
		t.Fatal("equal fork and tools in other memory count as different")
	}
	typ := reflect.TypeOf(base)
	for i := range typ.NumField() {
		f := typ.Field(i)
		mod := base
		v := reflect.ValueOf(&mod).Elem().Field(i)
		switch f.Type.Kind() {
		case reflect.String:
			v.SetString("x")
		case reflect.Bool:
			v.SetBool(true)
		case reflect.Int:
			v.SetInt(7)
		case reflect.Slice: // Tools
			v.Set(reflect.ValueOf([]string{"b"}))
		case reflect.Pointer: // Fork
			v.Set(reflect.ValueOf(&prompt.Fork{Title: "other"}))
		case reflect.Struct: // Now
			v.Set(reflect.ValueOf(time.Unix(200, 0).UTC()))
		default:
			t.Fatalf("field %s has a kind (%s) this test does not change", f.Name, f.Type.Kind())
		}
		if prompt.SameOptions(base, mod) {
			t.Errorf("options that differ in %s count as the same", f.Name)
		}
	}
	// Nil and empty tool lists mean different things (all tools, none).
	none := base
	none.Tools = []string{}
	all := base
	all.Tools = nil
	if prompt.SameOptions(none, all) {
		t.Error("no tools and all tools count as the same")
	}
	// A tool list that joins to the same text is still another list.
	one, two := base, base
	one.Tools, two.Tools = []string{"a,b"}, []string{"a", "b"}
	if prompt.SameOptions(one, two) {
		t.Error(`tools ["a,b"] and ["a" "b"] count as the same`)
	}
	noFork := base
	noFork.Fork = nil
	if prompt.SameOptions(base, noFork) || prompt.SameOptions(noFork, base) {
		t.Error("a fork and none count as the same")
	}
}

// TestToolListsThatJoinAlikeRenderApart renders with the tool list
// ["execute_sql,clarification"] (no tool of either name) and then with
// ["execute_sql" "clarification"] on one builder: the second must be the
// prompt for those two tools, not the first result again (a key that
// joined the list with commas gave both the same key).
func TestToolListsThatJoinAlikeRenderApart(t *testing.T) {
	dir := t.TempDir()
	ws, err := workspace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	b := prompt.New(ws)
	defer b.Close()
	opts := prompt.Options{Preset: prompt.Analyst, Now: fixedNow, GOOS: "linux", GOARCH: "amd64", Tools: []string{"execute_sql,clarification"}}
	first, err := b.Render(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	opts.Tools = []string{"execute_sql", "clarification"}
	second, err := b.Render(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	want := render(t, dir, opts)
	if second.Prompt != want.Prompt {
		t.Fatal("the second render is not the prompt for its own tools")
	}
	if first.Prompt == second.Prompt {
		t.Fatal("the two tool lists give the same prompt, so this test shows nothing")
	}
}
