package memory

import (
	"errors"
	"strings"
	"testing"
)

func TestNormalize(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Respond in French", "Respond in French."},
		{"  Respond   in\tFrench \n", "Respond in French."},
		{"Never use tables.", "Never use tables."},
		{"Is the user Alex?", "Is the user Alex?"},
		{"Always be brief!", "Always be brief!"},
		{"Ends with ellipsis...", "Ends with ellipsis..."},
		{"Ends with a colon:", "Ends with a colon:."},
		{"line one\r\nline two", "line one line two."},
		{"non\u00a0breaking space", "non breaking space."},
		{"Le client préfère l'été", "Le client préfère l'été."},
	}
	for _, tt := range tests {
		got, err := Normalize(tt.in)
		if err != nil {
			t.Errorf("Normalize(%q): %v", tt.in, err)
			continue
		}
		if got != tt.want {
			t.Errorf("Normalize(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestNormalizeRejects(t *testing.T) {
	for _, in := range []string{"", "   ", "\n\t\r\n"} {
		if _, err := Normalize(in); !errors.Is(err, ErrEmptyContent) {
			t.Errorf("Normalize(%q) err = %v, want ErrEmptyContent", in, err)
		}
	}
	for _, size := range []int{MaxContentBytes + 1, 1 << 20, 10 << 20} {
		_, err := Normalize(strings.Repeat("a", size))
		var tl *ContentTooLongError
		if !errors.As(err, &tl) {
			t.Fatalf("Normalize(%d bytes) err = %v, want *ContentTooLongError", size, err)
		}
		if !strings.Contains(err.Error(), "the limit is 65536") {
			t.Errorf("error %q does not state the limit", err)
		}
	}
	// Exactly at the limit, counting the full stop Normalize adds.
	if _, err := Normalize(strings.Repeat("a", MaxContentBytes-1)); err != nil {
		t.Errorf("content of exactly the limit: %v", err)
	}
	// White space that collapses brings long input under the limit.
	if _, err := Normalize("a" + strings.Repeat(" ", 2*MaxContentBytes) + "b"); err != nil {
		t.Errorf("collapsible white space: %v", err)
	}
}

func TestCheckCategory(t *testing.T) {
	if err := CheckCategory(DefaultCategories, "personal_fact"); err != nil {
		t.Error(err)
	}
	err := CheckCategory(DefaultCategories, "hobby")
	want := `unknown memory category "hobby" (valid: global_rule, personal_fact)`
	if err == nil || err.Error() != want {
		t.Errorf("err = %v, want %s", err, want)
	}
	for _, cats := range [][]Category{
		nil,
		{{Name: "", Label: "X"}},
		{{Name: "a", Label: ""}},
		{{Name: "a", Label: "A"}, {Name: "a", Label: "B"}},
	} {
		if CheckCategories(cats) == nil {
			t.Errorf("CheckCategories(%v) accepted a bad list", cats)
		}
	}
	if err := CheckCategories(DefaultCategories); err != nil {
		t.Error(err)
	}
}

// Clean keeps what was given, white space aside: no full stop is added
// (a person's `loom memory add`, the API, an import), unlike Normalize,
// extraction's form.
func TestClean(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"Respond in French", "Respond in French"},
		{"  Respond   in\tFrench \n", "Respond in French"},
		{"Ends with a colon:", "Ends with a colon:"},
		{"line one\r\nline two", "line one line two"},
		{"Never use tables.", "Never use tables."},
	} {
		if got, err := Clean(tt.in); err != nil || got != tt.want {
			t.Errorf("Clean(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
	if _, err := Clean(" \t\n"); !errors.Is(err, ErrEmptyContent) {
		t.Errorf("Clean(blank) err = %v, want ErrEmptyContent", err)
	}
	var tl *ContentTooLongError
	if _, err := Clean(strings.Repeat("a", MaxContentBytes+1)); !errors.As(err, &tl) {
		t.Errorf("Clean(over the limit) err = %v, want *ContentTooLongError", err)
	}
	if _, err := Clean(strings.Repeat("a", MaxContentBytes)); err != nil {
		t.Errorf("Clean(exactly the limit): %v", err)
	}
}
