package messages

import (
	_ "embed"
	"strings"
	"sync"
	"time"

	"github.com/loomctx/loom/internal/template"
)

// runtimeText is the runtime context block. Its first and last lines are the
// markers that let Clean remove the block exactly; they must stay literal.
//
//go:embed runtime.tmpl
var runtimeText string

var (
	runtimeTmpl = sync.OnceValue(func() *template.Template {
		return template.Must(template.New("runtime").Parse(strings.TrimRight(runtimeText, "\n")))
	})
	// RuntimeOpen and RuntimeClose are the first and last lines of every
	// runtime context block.
	RuntimeOpen, RuntimeClose = markers(runtimeText)
)

func markers(text string) (open, close string) {
	lines := strings.Split(strings.TrimRight(text, "\n"), "\n")
	return lines[0], lines[len(lines)-1]
}

// blockSep separates the runtime block from the message text, and a merged
// message from the history message it joins.
const blockSep = "\n\n"

// Placement says where the runtime block goes in the current message.
type Placement string

// The two placements. After is the default: the message text then comes
// first, so the part of a message a provider has seen before stays the same.
const (
	PlaceAfter  Placement = "after"
	PlaceBefore Placement = "before"
)

// Runtime is the per-turn metadata the model may use but must not obey:
// the time and where the message came from. Empty fields are left out.
type Runtime struct {
	// Now is the turn's time; the zero time means time.Now().
	Now time.Time
	// Location is the zone the time is shown in; nil means UTC.
	Location *time.Location
	Channel  string
	ChatID   string
	SenderID string
	// Placement is before or after the message text; empty means after.
	Placement Placement
	// Omit leaves the block out entirely.
	Omit bool
	// Memories are memories recalled for this turn, one line each.
	Memories []string
}

// RuntimeBlock renders the runtime context block, markers included.
func RuntimeBlock(rt Runtime) string {
	now := rt.Now
	if now.IsZero() {
		now = time.Now()
	}
	loc := rt.Location
	if loc == nil {
		loc = time.UTC
	}
	now = now.In(loc)
	data := runtimeData{
		Time:     now.Format("2006-01-02 15:04 (Monday)") + ", " + zoneName(now, loc),
		Channel:  oneLine(rt.Channel),
		ChatID:   oneLine(rt.ChatID),
		SenderID: oneLine(rt.SenderID),
	}
	if len(rt.Memories) > 0 {
		lines := make([]string, len(rt.Memories))
		for i, m := range rt.Memories {
			lines[i] = "- " + oneLine(m)
		}
		data.Memories = strings.Join(lines, "\n")
	}
	blocks.Lock()
	block, ok := blocks.m[data]
	blocks.Unlock()
	if ok {
		return block
	}
	var b strings.Builder
	if err := runtimeTmpl().Execute(&b, data); err != nil {
		// The template is embedded and its data are plain strings; a failure
		// here is a build defect, caught by the tests.
		panic("messages: runtime template: " + err.Error())
	}
	block = b.String()
	if len(block) > maxBlockBytes {
		return block
	}
	blocks.Lock()
	if len(blocks.m) >= maxBlocks {
		clear(blocks.m)
	}
	blocks.m[data] = block
	blocks.Unlock()
	return block
}

// runtimeData is what the runtime template shows.
type runtimeData struct{ Time, Channel, ChatID, SenderID, Memories string }

// blocks are the runtime blocks made lately, by what they show: a server
// answers many turns a minute for the same channels and chats, and
// executing the template took as long as the rest of building a short
// turn. The time is shown to the minute, so entries turn over each minute;
// the map is emptied when it reaches maxBlocks, and holds at most
// maxBlocks × maxBlockBytes of text.
var blocks = struct {
	sync.Mutex
	m map[runtimeData]string
}{m: map[runtimeData]string{}}

const (
	maxBlocks     = 512
	maxBlockBytes = 2048 // longer blocks (long ids) are made each time
)

// zoneName names the zone both ways a reader needs: the IANA name and the
// abbreviation with its UTC offset, e.g. "Europe/Paris (CET, UTC+01:00)".
func zoneName(t time.Time, loc *time.Location) string {
	abbr := t.Format("MST")
	offset := "UTC" + t.Format("-07:00")
	name := loc.String()
	if name == "UTC" {
		return "UTC"
	}
	if abbr == offset[3:] || strings.HasPrefix(abbr, "+") || strings.HasPrefix(abbr, "-") {
		return name + " (" + offset + ")"
	}
	return name + " (" + abbr + ", " + offset + ")"
}

// oneLine keeps a metadata value on its line, so no value can forge a
// closing marker.
func oneLine(s string) string {
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return strings.Join(strings.Fields(s), " ")
}

// isRuntimeBlock reports whether s is exactly one runtime block.
func isRuntimeBlock(s string) bool {
	return strings.HasPrefix(s, RuntimeOpen+"\n") && strings.HasSuffix(s, "\n"+RuntimeClose)
}

// attachRuntime puts the block before or after text.
func attachRuntime(text, block string, p Placement) string {
	switch {
	case block == "":
		return text
	case text == "":
		return block
	case p == PlaceBefore:
		return block + blockSep + text
	default:
		return text + blockSep + block
	}
}

// StripRuntime removes a runtime block that starts or ends s, together with
// the separator loom put beside it, and reports whether it found one. A
// marker typed in the middle of a message is text, and stays.
func StripRuntime(s string) (string, bool) {
	if strings.HasSuffix(s, "\n"+RuntimeClose) {
		if i := strings.LastIndex(s, RuntimeOpen+"\n"); i >= 0 && (i == 0 || strings.HasSuffix(s[:i], blockSep)) {
			if i == 0 {
				return "", true
			}
			return s[:i-len(blockSep)], true
		}
	}
	if strings.HasPrefix(s, RuntimeOpen+"\n") {
		if j := strings.Index(s, "\n"+RuntimeClose); j >= 0 {
			rest := s[j+1+len(RuntimeClose):]
			if rest == "" {
				return "", true
			}
			if after, ok := strings.CutPrefix(rest, blockSep); ok {
				return after, true
			}
		}
	}
	return s, false
}
