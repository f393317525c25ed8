// Package channels holds the wording loom adds to a prompt for the channel a
// reply goes to (Slack, WhatsApp, email, …), the conversation-link section
// and the selection-context section of a forked chat.
//
// All of it is embedded Markdown under data/: one file per channel, each a
// section tree that starts with a "## " heading, plus the chat_link.md and
// fork.md templates.
package channels

import (
	"embed"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"
)

//go:embed data/*.md
var dataFS embed.FS

// Channel is the prompt section for one channel.
type Channel struct {
	Name  string // the file name without .md: "slack"
	Title string // the text of the top heading: "Slack Responses"
	Body  string // the whole Markdown section, ending in one newline
}

var (
	byName map[string]Channel
	names  []string
	chatLinkTemplate,
	forkTemplate string
)

// load parses the embedded channel files on first use, not at start-up,
// which every command would pay for.
var load = sync.OnceFunc(func() {
	byName = map[string]Channel{}
	entries, err := fs.ReadDir(dataFS, "data")
	if err != nil {
		panic(err)
	}
	for _, e := range entries {
		name := strings.TrimSuffix(e.Name(), ".md")
		data, err := fs.ReadFile(dataFS, "data/"+e.Name())
		if err != nil {
			panic(err)
		}
		switch name {
		case "chat_link":
			chatLinkTemplate = string(data)
			continue
		case "fork":
			forkTemplate = string(data)
			continue
		}
		c, err := parse(name, string(data))
		if err != nil {
			panic(err) // embedded data; TestFiles checks every file
		}
		byName[name] = c
		names = append(names, name)
	}
	slices.Sort(names)
})

func parse(name, text string) (Channel, error) {
	first, _, _ := strings.Cut(text, "\n")
	title, ok := strings.CutPrefix(first, "## ")
	if !ok || strings.TrimSpace(title) == "" {
		return Channel{}, fmt.Errorf("data/%s.md:1: must start with a \"## \" heading", name)
	}
	return Channel{Name: name, Title: strings.TrimSpace(title), Body: text}, nil
}

// Get returns the channel named name, matched case-insensitively.
func Get(name string) (Channel, bool) {
	load()
	c, ok := byName[strings.ToLower(strings.TrimSpace(name))]
	return c, ok
}

// Names lists the known channels, sorted.
func Names() []string {
	load()
	return slices.Clone(names)
}

// ChatLink returns the conversation-link section for url. The URL is
// inserted as it is: no character in it has a special meaning.
func ChatLink(url string) string {
	load()
	return strings.ReplaceAll(chatLinkTemplate, "{{chat_url}}", url)
}

// Fork returns the selection-context section for a forked chat: the intro
// naming the document and its author, then the selection quoted with "> "
// on every line (">" alone on blank lines, so no line ends in a space). An
// empty author reads "an unknown author".
func Fork(title, author, selection string) string {
	if strings.TrimSpace(author) == "" {
		author = "an unknown author"
	}
	// One pass, so a title that contains "{{author}}" stays as written.
	load()
	intro := strings.NewReplacer("{{title}}", title, "{{author}}", author).Replace(forkTemplate)
	var b strings.Builder
	b.WriteString(intro)
	b.WriteString("\n")
	selection = strings.TrimRight(strings.ReplaceAll(selection, "\r\n", "\n"), "\n")
	for line := range strings.SplitSeq(selection, "\n") {
		line = strings.TrimRight(line, " \t")
		if line == "" {
			b.WriteString(">\n")
			continue
		}
		b.WriteString("> ")
		b.WriteString(line)
		b.WriteString("\n")
	}
	return b.String()
}
