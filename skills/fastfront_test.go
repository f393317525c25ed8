package skills

import (
	"reflect"
	"strings"
	"testing"
)

// The fast path must read every frontmatter it accepts exactly as the YAML
// parser does: the same values, lines and diagnostics.
func FuzzFastFrontmatter(f *testing.F) {
	for _, s := range []string{
		"name: pdf\ndescription: Read PDF files",
		"name: x\ndescription: Fetch #hashtags and stuff",
		"name: x\ndescription: a: b",
		"name: yes\ndescription: no",
		"name: x\nname: y",
		"name: x\n\ndescription: multi\n  line",
		"name: x\ndescription: ünïcödé text, with [brackets] and {braces}",
		"name: x\nalways: true",
		"name: x\ndescription: 2024-01-01",
		"name: x\ndescription:\n  - a",
		"name: x\ndescription: tab\there",
		"name: x\ndescription: trailing   ",
		"name:x",
		"name: x\r\ndescription: y",
		"license: MIT\ncompatibility: Linux only",
		"Name: X\ndescription: e10",
		"name: x\ndescription: a #b",
		"name: x\ndescription: a\u00a0b",
		"name: x\ndescription: a\u2028b",
		`name: x
metadata: {"nanobot":{"emoji":"📊","requires":{"bins":["docker"],"env":[]}}}`,
		`name: x
metadata: {"nanobot": {"always": true, "os": ["linux", "darwin"]}, "other": {}}`,
		`metadata: {"a":1}`,
		`metadata: {"a":"b","a":"c"}`,
		`metadata: {"a":"b\"c"}`,
		`metadata: {"a":"b #c"}`,
		`metadata: {"a":truex}`,
		`metadata: {"a":null} # note`,
		`metadata: {"a": ["x",]}`,
		"metadata: {\"a\":\"\tb\"}",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, src string) {
		lines := map[string]int{}
		if fastFrontmatter(src, lines) == nil {
			return
		}
		fm1, d1, err1 := decode("SKILL.md", src, true)
		fm2, d2, err2 := decode("SKILL.md", src, false)
		if (err1 == nil) != (err2 == nil) {
			t.Fatalf("%q: fast error %v, parser error %v", src, err1, err2)
		}
		if err1 != nil {
			return
		}
		if !reflect.DeepEqual(fm1, fm2) {
			t.Fatalf("%q:\nfast   %#v\nparser %#v", src, fm1, fm2)
		}
		if !reflect.DeepEqual(diagStrings(d1), diagStrings(d2)) {
			t.Fatalf("%q:\nfast   %v\nparser %v", src, diagStrings(d1), diagStrings(d2))
		}
	})
}

// A large frontmatter is refused for its size, before any parsing; one with
// many keys and no aliases is never called an alias bomb.
func TestFrontmatterSizeAndAliases(t *testing.T) {
	var b strings.Builder
	for i := range 20000 {
		b.WriteString("k")
		b.WriteString(itoa(i))
		b.WriteString(": v\n")
	}
	_, diags, err := decodeFrontmatter("SKILL.md", b.String())
	if err == nil || len(diags) != 1 || diags[0].Code != "skill.frontmatter-size" {
		t.Fatalf("20k keys: %v %v", err, diagStrings(diags))
	}
	// Under the cap, many keys and no aliases: accepted.
	var m strings.Builder
	m.WriteString("name: many\ndescription: d\n")
	for i := range 2000 {
		m.WriteString("x")
		m.WriteString(itoa(i))
		m.WriteString(": [1, 2]\n")
	}
	fm, diags, err := decodeFrontmatter("SKILL.md", m.String())
	if err != nil || fm.Name != "many" {
		t.Fatalf("2000 keys: %v %v", err, diagStrings(diags))
	}
	for _, d := range diags {
		if d.Code == "skill.alias-bomb" {
			t.Errorf("no aliases, yet: %v", d)
		}
	}
}
