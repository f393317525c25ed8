package channels

import "strings"

// ForkIntro returns the selection-context heading and intro for a forked
// chat, without the selection itself, so that a caller can quote the
// selection with its own renderer.
func ForkIntro(title, author string) string {
	if strings.TrimSpace(author) == "" {
		author = "an unknown author"
	}
	load()
	return strings.TrimRight(strings.NewReplacer("{{title}}", title, "{{author}}", author).Replace(forkTemplate), "\n")
}
