package channels

import (
	"fmt"
	"io/fs"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var (
	numbered = regexp.MustCompile(`^\d+\. `)
	// Two pieces of text glued together: "FlowYou", "rules.Next", "first.- item", "text## Heading".
	glued = regexp.MustCompile(`[a-z][A-Z][a-z]|[a-z][.!?;][A-Z]|[.!?:;](- |\d+\. |#)|[^#\s]#{2,} `)
	// Names whose inner capital is part of the name.
	camelNames = strings.NewReplacer("WhatsApp", "Whatsapp")
)

// checkMarkdown holds every data file to the shape of a proper Markdown
// section: clean lines, headings set apart by blank lines, lists that start
// on their own line, and nothing from two sections run together (nao's
// provider prompts came out as "## Provider Response FlowYou are …").
func checkMarkdown(file, text string, top bool) []string {
	var problems []string
	errorf := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	if !strings.HasSuffix(text, "\n") || strings.HasSuffix(text, "\n\n") {
		errorf("%s: must end with exactly one newline", file)
	}
	if strings.ContainsAny(text, "\r\t") {
		errorf("%s: contains a carriage return or a tab", file)
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if top && !strings.HasPrefix(lines[0], "## ") {
		errorf("%s:1: must start with a \"## \" heading", file)
	}
	headings, bullets := 0, 0
	for i, l := range lines {
		n := i + 1
		prev, next := "", ""
		if i > 0 {
			prev = lines[i-1]
		}
		if i+1 < len(lines) {
			next = lines[i+1]
		}
		if strings.TrimRight(l, " ") != l {
			errorf("%s:%d: trailing whitespace", file, n)
		}
		if i > 0 && l == "" && prev == "" {
			errorf("%s:%d: two blank lines in a row", file, n)
		}
		isList := strings.HasPrefix(l, "- ") || numbered.MatchString(l)
		switch {
		case strings.HasPrefix(l, "#"):
			headings++
			level := len(l) - len(strings.TrimLeft(l, "#"))
			if want := 3; i == 0 {
				want = 2
				if level != want {
					errorf("%s:%d: the top heading must be level 2", file, n)
				}
			} else if level != want {
				errorf("%s:%d: below the top heading only level-3 headings are allowed", file, n)
			}
			title := strings.TrimSpace(strings.TrimLeft(l, "#"))
			if title == "" || len(title) > 40 || strings.Contains(title, ". ") && !numbered.MatchString(title) ||
				strings.HasSuffix(title, ".") || strings.HasSuffix(title, ":") {
				errorf("%s:%d: heading %q is not a short title", file, n, title)
			}
			if i > 0 && prev != "" {
				errorf("%s:%d: heading must follow a blank line", file, n)
			}
			if next != "" {
				errorf("%s:%d: heading must be followed by a blank line", file, n)
			}
		case isList:
			bullets++
			prevIsList := strings.HasPrefix(prev, "- ") || numbered.MatchString(prev)
			if prev != "" && !prevIsList {
				errorf("%s:%d: a list must start after a blank line", file, n)
			}
		case l != "" && (strings.HasPrefix(prev, "- ") || numbered.MatchString(prev)):
			errorf("%s:%d: text continues a list item without a blank line", file, n)
		}
		if m := glued.FindString(camelNames.Replace(l)); m != "" {
			errorf("%s:%d: %q runs two pieces of text together: %q", file, n, m, l)
		}
	}
	if top && (headings < 2 || bullets < 3) {
		errorf("%s: %d headings and %d list items; a channel needs sections with rules", file, headings, bullets)
	}
	return problems
}

func TestFiles(t *testing.T) {
	entries, err := fs.ReadDir(dataFS, "data")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := fs.ReadFile(dataFS, "data/"+e.Name())
		if err != nil {
			t.Fatal(err)
		}
		name := strings.TrimSuffix(e.Name(), ".md")
		for _, p := range checkMarkdown("data/"+e.Name(), string(data), name != "chat_link" && name != "fork") {
			t.Error(p)
		}
	}
}

// The checker itself must catch nao's run-on output.
func TestCheckerCatchesRunOns(t *testing.T) {
	bad := []string{
		"## Provider Response FlowYou are responding to a user.## Phase 1 — Plan\n",
		"## A\n\nText.\n- item\n",
		"## A\n\nFirst rule.- Second rule\n",
		"## A\n\n- item\ncontinued without indent\n",
		"## A\n### B\n\n- x\n",
		"## A\n\n- x \n",
		"## A\n\n- x\n\n",
	}
	for _, text := range bad {
		if len(checkMarkdown("bad.md", text, false)) == 0 {
			t.Errorf("checker accepted %q", text)
		}
	}
}

func TestNamesAndGet(t *testing.T) {
	want := []string{"automation", "discord", "email", "mattermost", "slack", "teams", "telegram", "whatsapp"}
	if got := Names(); !slices.Equal(got, want) {
		t.Fatalf("Names() = %v, want %v", got, want)
	}
	// Each channel's own formatting facts, checked against its platform.
	facts := map[string][]string{
		"whatsapp":   {"*bold*", "_italic_", "~strikethrough~", "```monospace```", "Do not use headings, Markdown links, tables"},
		"slack":      {"mrkdwn", "<https://example.com|link text>", "neither tables nor headings"},
		"teams":      {"subset of Markdown", "Small tables are fine"},
		"telegram":   {"no tables or headings"},
		"mattermost": {"standard Markdown", "Tables are supported"},
		"discord":    {"no table syntax", "2,000 characters"},
		"email":      {"subject-like summary", "Leave out greetings"},
		"automation": {"Do not ask clarifying questions", "only the final result"},
	}
	flow := []string{"### 1. Plan", "### 2. Work", "### 3. Answer", "1. **Findings**", "2. **Resources and definitions**"}
	for _, name := range want {
		c, ok := Get(strings.ToUpper(name))
		if !ok {
			t.Fatalf("Get(%q) not found", name)
		}
		if c.Name != name || c.Title == "" || !strings.HasPrefix(c.Body, "## "+c.Title+"\n\n") {
			t.Errorf("%s: name %q title %q", name, c.Name, c.Title)
		}
		for _, f := range facts[name] {
			if !strings.Contains(c.Body, f) {
				t.Errorf("%s: missing %q", name, f)
			}
		}
		hasFlow := name != "whatsapp" && name != "email" && name != "automation"
		for _, f := range flow {
			if strings.Contains(c.Body, f) != hasFlow {
				t.Errorf("%s: response flow %q present=%v, want %v", name, f, !hasFlow, hasFlow)
			}
		}
	}
	if _, ok := Get("chat_link"); ok {
		t.Error("templates must not be channels")
	}
	if _, ok := Get("irc"); ok {
		t.Error("unknown channel found")
	}
}

func TestChatLink(t *testing.T) {
	url := "https://app.example.com/c/42?x=$1&y=$&z=$$"
	got := ChatLink(url)
	want := "## Conversation Link\n\nThis conversation is also available in the web app at " + url + ". Share the link only when the user asks for it.\n"
	if got != want {
		t.Errorf("ChatLink:\n got %q\nwant %q", got, want)
	}
}

func TestFork(t *testing.T) {
	got := Fork(`Q3 {{author}} $1 review`, "Ana", "Revenue grew 12%.\r\n\r\n  Churn fell.  \n")
	want := "## Selection Context\n\n" +
		"The user is asking about this passage, selected from **\"Q3 {{author}} $1 review\"** by Ana. Keep it at the centre of your answer.\n" +
		"\n" +
		"> Revenue grew 12%.\n" +
		">\n" +
		">   Churn fell.\n"
	if got != want {
		t.Errorf("Fork:\n got %q\nwant %q", got, want)
	}
	if got := Fork("T", " ", "x"); !strings.Contains(got, "by an unknown author.") {
		t.Errorf("empty author: %q", got)
	}
}
