package messages

import (
	"strings"
	"testing"
)

func TestPrefixHashMatchesJSONL(t *testing.T) {
	// Checked with sha256sum over the hand-written lines:
	// printf '%s\n' '{"role":"system","content":"S"}' '{"role":"user","content":"a"}' \
	//   '{"role":"assistant","content":"b"}' | sha256sum
	res, err := Build(Turn{System: "S", History: []Message{user("a"), assistant("b")}, Message: "c", Runtime: Runtime{Omit: true, Placement: PlaceAfter}}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := res.Report.Prefix.SHA256, "bcc63e6fef01d05a332813ce02e0170547564fa9cdf7a5ca8922d65cf4e755b3"; got != want {
		t.Errorf("prefix sha256 = %s, want %s", got, want)
	}
}

func TestPrefixTokens(t *testing.T) {
	c := newCounter(t)
	system := strings.Repeat("Rule: be brief. ", 10)
	hist := []Message{user("hello there"), {Role: RoleAssistant, ToolCalls: []ToolCall{call("c")}}, result("c", "ok")}
	res, err := Build(Turn{System: system, History: hist, Message: "next"}, Options{Counter: c})
	if err != nil {
		t.Fatal(err)
	}
	want := c.Count(system) + c.Count("hello there") + c.Count("read") + c.Count(`{"path":"a"}`) + c.Count("ok")
	if p := res.Report.Prefix; p.Tokens != want || p.SystemTokens != c.Count(system) || p.Tokens == 0 {
		t.Errorf("tokens %+v, want %d", p, want)
	}
	if w := res.Report.Warnings; len(w) != 1 || !strings.Contains(w[0], "below the 1024-token minimum") {
		t.Errorf("warnings = %q", w)
	}
	res, _ = Build(Turn{System: system, History: hist, Message: "next"}, Options{Counter: c, MinCacheTokens: 10})
	if len(res.Report.Warnings) != 0 {
		t.Errorf("warnings with a low minimum: %q", res.Report.Warnings)
	}
}

func TestCacheDiff(t *testing.T) {
	sys := "# Identity\nloom\n\n# Skills\npdf\n\n# Memory\nAna\n"
	sections := func(s string) []Section {
		var out []Section
		for _, name := range []string{"# Identity", "# Skills", "# Memory"} {
			i := strings.Index(s, name)
			j := len(s)
			if k := strings.Index(s[i+1:], "\n# "); k >= 0 {
				j = i + 1 + k + 1
			}
			out = append(out, Section{Name: name[2:], Start: i, End: j})
		}
		return out
	}
	build := func(system string, hist []Message) Report {
		t.Helper()
		res, err := Build(Turn{System: system, SystemSections: sections(system), History: hist, Message: "x"}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		return res.Report
	}
	h := []Message{user("a"), assistant("b"), user("c"), assistant("d")}
	base := build(sys, h)

	for _, tc := range []struct {
		name    string
		cur     Report
		changed bool
		section string
		message int
		reason  string
	}{
		{"same", build(sys, h), false, "", -1, "prefix unchanged: system prompt and 4 history messages as before, 0 new"},
		{"grown history", build(sys, append(h[:4:4], user("e"), assistant("f"))), false, "", -1, "prefix unchanged: system prompt and 4 history messages as before, 2 new"},
		{"skills edited", build(strings.Replace(sys, "pdf", "pdf, git", 1), h), true, "Skills", -1, `system prompt changed in section "Skills"`},
		{"memory edited", build(strings.Replace(sys, "Ana", "Ana Lee", 1), h), true, "Memory", -1, `system prompt changed in section "Memory"`},
		{"history rewritten", build(sys, []Message{user("a"), assistant("B"), user("c"), assistant("d")}), true, "", 1, "history message 1 changed"},
		{"history slid", build(sys, h[2:]), true, "", 0, "history message 0 changed"},
		{"history cut", build(sys, h[:2]), true, "", 2, "history message 2 was removed: the history is shorter than before (2 messages, was 4)"},
	} {
		d := CacheDiff(base, tc.cur)
		if d.Changed != tc.changed || d.Section != tc.section || d.Message != tc.message || d.Reason != tc.reason {
			t.Errorf("%s: got %+v", tc.name, d)
		}
	}

	// Without sections the diff still names the system prompt.
	a, _ := Build(Turn{System: "one", Message: "x"}, Options{})
	b, _ := Build(Turn{System: "two", Message: "x"}, Options{})
	if d := CacheDiff(a.Report, b.Report); !d.Changed || d.Reason != "system prompt changed" {
		t.Errorf("got %+v", d)
	}
}
