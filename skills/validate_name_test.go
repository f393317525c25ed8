package skills

import (
	"regexp"
	"testing"
)

// specName is the spec's name pattern, written out by hand: both say the
// same of every name up to four characters over an alphabet that has each
// kind of character the rule treats apart, and of some longer ones.
func TestSpecNameIsTheSpecPattern(t *testing.T) {
	re := regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)
	alphabet := []string{"a", "z", "0", "9", "-", "A", "_", " ", "é", "\n"}
	var names []string
	var grow func(prefix string, n int)
	grow = func(prefix string, n int) {
		names = append(names, prefix)
		if n == 0 {
			return
		}
		for _, c := range alphabet {
			grow(prefix+c, n-1)
		}
	}
	grow("", 4)
	names = append(names, "pdf-tools", "pdf--tools", "a-b-c-d-e", "-pdf", "pdf-", "PDF", "skill-00001", "a1-b2")
	for _, n := range names {
		if got, want := specName(n), re.MatchString(n); got != want {
			t.Errorf("specName(%q) = %v, the pattern says %v", n, got, want)
		}
	}
}
