package watch

import "testing"

func TestDiff(t *testing.T) {
	tests := []struct{ a, b, want string }{
		{"x\ny", "x\ny", ""},
		{"a\nb\nc", "a\nB\nc", "@@ line 2\n-b\n+B\n"},
		{"a\nc", "a\nb\nc", "@@ line 2\n+b\n"},
		{"a\nb\nc\nd", "a\nd", "@@ line 2\n-b\n-c\n"},
		{"a\nb\nc\nd\ne", "a\nX\nc\nd\nY", "@@ line 2\n-b\n+X\n@@ line 5\n-e\n+Y\n"},
	}
	for _, tc := range tests {
		if got := Diff(tc.a, tc.b); got != tc.want {
			t.Errorf("Diff(%q, %q) =\n%q\nwant\n%q", tc.a, tc.b, got, tc.want)
		}
	}
}
