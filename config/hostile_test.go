package config

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// Hostile loom.yaml files: each is refused with a one-line error naming
// its line, and none panics.
func TestConfigHostile(t *testing.T) {
	for _, tt := range []struct {
		name, yaml, want string
	}{
		{"unknown tag on a list", "tools: !x\n", `loom.yaml:1: tools: unknown tag "!x"`},
		{"unknown tag on a value", "name: !x Ledger\n", `loom.yaml:1: name: unknown tag "!x"`},
		{"unknown tag on a mapping", "budget: !x {total: 1}\n", `loom.yaml:1: budget: unknown tag "!x"`},
		{"unknown tag at the top", "!x {name: a}\n", `loom.yaml:1: expected a mapping of settings, got a value tagged "!x"`},
		{"binary tag", "name: !!binary aGk=\n", `loom.yaml:1: name: unknown tag "!!binary"`},
		{"duplicate key", "name: a\nemoji: b\nname: c\n", `loom.yaml:3: name: set twice (first on line 1)`},
		{"merge key", "budget:\n  <<: {total: 1}\n", `loom.yaml:2: merge keys (<<) are not supported`},
		{"mapping as key", "? {a: b}\n: c\n", `loom.yaml:1: a key must be a name, got a mapping`},
		{"deep flow nesting", "name: x\ndisable: " + strings.Repeat("[", 100) + strings.Repeat("]", 100) + "\n", `loom.yaml:2: nested more than 64 levels deep`},
		{"deep flow mapping", "\n\nbudget: " + strings.Repeat("{a: ", 70) + "1" + strings.Repeat("}", 70) + "\n", `loom.yaml:3: nested more than 64 levels deep`},
		{"huge number", "max_file_size: 99999999999999999999999\n", `loom.yaml:1: max_file_size: 99999999999999999999999 is out of range`},
		{"int overflow", "budget:\n  total: 9223372036854775807\n", ""},
		{"too many entries", "budget:\n  sections:\n" + strings.Repeat("    a: 1\n", 10001), `loom.yaml:2: budget.sections: more than 10000 entries`},
		{"bool for string", "name: true\n", `loom.yaml:1: name: expected a string, got true or false`},
		{"alias of a list into a string", "disable: &d [a]\nname: *d\n", `loom.yaml:2: name: expected a string, got a list`},
		{"too large", "name: x\n" + strings.Repeat("#", MaxSize), "loom.yaml: file is too large (1048584 bytes; the limit is 1048576, whatever max_file_size allows other files)"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse(t, tt.yaml)
			if tt.want == "" {
				return // only: no panic
			}
			if err == nil || err.Error() != tt.want {
				t.Errorf("error\n got: %v\nwant: %s", err, tt.want)
			}
		})
	}
}

// Brackets inside quoted or plain scalars and comments are text, not
// nesting.
func TestConfigBracketsInText(t *testing.T) {
	deep := strings.Repeat("[", 100)
	text := "name: 'a" + deep + "'\ndescription: \"" + deep + "\"\nemoji: x" + deep + "\n# " + deep + "\n"
	c, err := parse(t, text)
	if err != nil {
		t.Fatal(err)
	}
	if c.Name != "a"+deep || c.Emoji != "x"+deep {
		t.Errorf("got %q %q", c.Name, c.Emoji)
	}
}

// Aliases are followed, but cannot multiply the work.
func TestConfigAliases(t *testing.T) {
	c, err := parse(t, "disable: &d [memory, skills]\noverrides:\n  keep: *d\n")
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(c.Overrides.Keep, ",") != "memory,skills" {
		t.Errorf("keep %v", c.Overrides.Keep)
	}
	var b strings.Builder
	b.WriteString("x: &a {name: a, label: A}\n")
	b.WriteString("memory:\n  categories: [")
	for i := range 5000 {
		fmt.Fprintf(&b, "*a, ")
		_ = i
	}
	b.WriteString("]\n")
	if _, err := parse(t, b.String()); err == nil {
		t.Error("no error") // x is unknown; the point is that it ends
	}
}

var raceEnabled bool

// The parse's memory is linear in the input, far under 50× even at the
// cap, for each shape that was super-linear under goccy/go-yaml.
func TestParseMemoryLinear(t *testing.T) {
	if testing.Short() {
		t.Skip("allocates tens of MB")
	}
	if raceEnabled {
		t.Skip("the race detector changes what allocates")
	}
	for _, sh := range hostileShapes {
		for _, size := range []int{16 << 10, 64 << 10, MaxSize} {
			parseAllocs(t, sh.name, sh.gen(size-64))
		}
	}
}

func parseAllocs(t *testing.T, name string, data []byte) {
	{
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		Parse("loom.yaml", data)
		runtime.ReadMemStats(&after)
		if ratio := float64(after.TotalAlloc-before.TotalAlloc) / float64(len(data)); ratio > 50 {
			t.Errorf("%s: %d bytes of input allocate %.0f× that", name, len(data), ratio)
		}
	}
}
