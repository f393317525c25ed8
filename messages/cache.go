package messages

import (
	"crypto/sha256"
	"encoding"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/loomctx/loom/internal/jsonout"
	"github.com/loomctx/loom/memory"
)

// Report is what a build saw: the stable prefix's fingerprint, the images
// attached and dropped, the skills expanded, and warnings.
type Report struct {
	// Prefix fingerprints the stable prefix: the system prompt plus the
	// history messages that are sent unchanged.
	Prefix Prefix `json:"prefix"`
	// Sections hashes each named section of the system prompt, by start.
	Sections []SectionHash `json:"sections"`
	// History is the sha256 of each stable history message's JSON line.
	History []string `json:"history"`
	// Merged is set when the current message was merged into the last
	// history message, which is then not part of the stable prefix.
	Merged       bool        `json:"merged,omitempty"`
	Media        []Attached  `json:"media"`
	DroppedMedia []Dropped   `json:"dropped_media"`
	Expansions   []Expansion `json:"expansions"`
	Warnings     []string    `json:"warnings"`
	// CacheDiff compares this prefix with a previous report's, when asked.
	CacheDiff *Diff `json:"cache_diff,omitempty"`
	// Recall lists the memories the runtime block recalled for this
	// turn, each with its score and why; nil when none were asked for.
	Recall *memory.Recall `json:"recall,omitempty"`
}

// Prefix fingerprints the stable prefix. SHA256 is the sha256 of the
// prefix's neutral JSONL: the system message and each stable history
// message, one JSON object per line, each line ending in "\n". Tokens
// counts the text of those messages (system prompt, contents, tool call
// arguments), without the few tokens of framing a provider adds per
// message.
type Prefix struct {
	SHA256       string `json:"sha256"`
	Tokens       int    `json:"tokens"`
	SystemSHA256 string `json:"system_sha256"`
	SystemTokens int    `json:"system_tokens"`
	Messages     int    `json:"messages"`
}

// SectionHash is the sha256 of one named section of the system prompt.
type SectionHash struct {
	Name   string `json:"name"`
	Start  int    `json:"start"`
	End    int    `json:"end"`
	SHA256 string `json:"sha256"`
}

func (r *Report) fillPrefix(system string, sections []Section, stable []Message, opts Options) error {
	sp, err := systemPartOf(system, sections)
	if err != nil {
		return err
	}
	r.Sections = slices.Clone(sp.hashes)
	h := sha256.New()
	if err := h.(encoding.BinaryUnmarshaler).UnmarshalBinary(sp.state); err != nil {
		return err
	}
	var line []byte
	r.History = make([]string, len(stable))
	for i, m := range stable {
		line, err = appendChat(line[:0], m)
		if err != nil {
			return fmt.Errorf("history message %d: %w", i, err)
		}
		sum := sha256.Sum256(line)
		r.History[i] = hex.EncodeToString(sum[:])
		h.Write(append(line, '\n'))
	}
	r.Prefix = Prefix{
		SHA256:       hex.EncodeToString(h.Sum(nil)),
		SystemSHA256: sp.sha,
		Messages:     len(stable),
	}
	r.Warnings = []string{}
	if opts.Counter != nil {
		r.Prefix.SystemTokens = opts.Counter.Count(system)
		r.Prefix.Tokens = r.Prefix.SystemTokens
		for _, m := range stable {
			r.Prefix.Tokens += countMessage(opts.Counter, m)
		}
		min := opts.MinCacheTokens
		if min <= 0 {
			min = DefaultMinCacheTokens
		}
		if r.Prefix.Tokens < min {
			r.Warnings = append(r.Warnings, fmt.Sprintf("stable prefix is %d tokens, below the %d-token minimum a provider caches; it will not be cached", r.Prefix.Tokens, min))
		}
	}
	return nil
}

func countMessage(c Counter, m Message) int {
	n := 0
	if m.Content.IsList() {
		for _, p := range m.Content.Parts {
			if p.Type == PartText {
				n += c.Count(p.Text)
			}
		}
	} else {
		n += c.Count(m.Content.Text)
	}
	for _, tc := range m.ToolCalls {
		n += c.Count(tc.Function.Name) + c.Count(tc.Function.Arguments)
	}
	return n + c.Count(m.Reasoning())
}

// systemPart is what a report takes from the system prompt alone: the
// section hashes, the prompt's hash, and the prefix hash's state after the
// system message's line.
type systemPart struct {
	system   string
	sections []Section
	hashes   []SectionHash
	sha      string
	state    []byte
	quoted   []byte // the prompt as a JSON string
}

// systemParts keeps the parts of the last long system prompts. A server
// builds turn after turn on the same rendered prompt, some 100 KB on a
// large workspace, while the rest of a turn is short: hashing the prompt
// three ways and escaping it for JSON, every turn, were most of a build.
// An entry is found by comparing the prompt (the same string, usually: by
// pointer at once) and its sections.
var systemParts struct {
	sync.Mutex
	ring [8]*systemPart
	next int
}

// minKeptSystem is the shortest system prompt kept in systemParts.
const minKeptSystem = 4 << 10

func systemPartOf(system string, sections []Section) (*systemPart, error) {
	keep := len(system) >= minKeptSystem
	if keep {
		systemParts.Lock()
		for _, e := range systemParts.ring {
			if e != nil && e.system == system && slices.Equal(e.sections, sections) {
				systemParts.Unlock()
				return e, nil
			}
		}
		systemParts.Unlock()
	}
	sp := &systemPart{system: system, sections: slices.Clone(sections)}
	sorted := slices.Clone(sections)
	slices.SortStableFunc(sorted, func(a, b Section) int { return a.Start - b.Start })
	sp.hashes = make([]SectionHash, 0, len(sorted))
	for _, s := range sorted {
		if s.Start < 0 || s.End < s.Start || s.End > len(system) {
			return nil, fmt.Errorf("system section %q: range [%d,%d) is outside the %d-byte prompt", s.Name, s.Start, s.End, len(system))
		}
		sp.hashes = append(sp.hashes, SectionHash{Name: s.Name, Start: s.Start, End: s.End, SHA256: hashString(system[s.Start:s.End])})
	}
	line, err := appendChat(nil, Message{Role: RoleSystem, Content: TextContent(system)})
	if err != nil {
		return nil, err
	}
	h := sha256.New()
	h.Write(append(line, '\n'))
	if sp.state, err = h.(encoding.BinaryMarshaler).MarshalBinary(); err != nil {
		return nil, err
	}
	sp.sha = hashString(system)
	if keep {
		// appendChat wrote {"role":"system","content":QUOTED}
		sp.quoted = line[len(`{"role":"system","content":`) : len(line)-1]
		systemParts.Lock()
		systemParts.ring[systemParts.next] = sp
		systemParts.next = (systemParts.next + 1) % len(systemParts.ring)
		systemParts.Unlock()
	}
	return sp, nil
}

// appendLongString is appendString, taking a long text that is a kept
// system prompt's JSON form from systemParts.
func appendLongString(dst []byte, s string) []byte {
	if len(s) >= minKeptSystem {
		systemParts.Lock()
		for _, e := range systemParts.ring {
			if e != nil && e.quoted != nil && e.system == s {
				systemParts.Unlock()
				return append(dst, e.quoted...)
			}
		}
		systemParts.Unlock()
	}
	return appendString(dst, s)
}

func hashString(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}

// Diff says where a prefix changed between two turns.
type Diff struct {
	// Changed is false when the previous prefix is still a prefix of the
	// current one, so a provider's cache can hit.
	Changed bool `json:"changed"`
	// Section names the first system prompt section that changed.
	Section string `json:"section,omitempty"`
	// Message is the index of the first history message that changed, or
	// -1.
	Message int `json:"message"`
	// Reason says it in a sentence.
	Reason string `json:"reason"`
}

// String returns the reason.
func (d Diff) String() string { return d.Reason }

// CacheDiff compares the prefix of a previous turn with the current one and
// names the first system prompt section, or else the first history message,
// where they part. A current history that extends the previous one is no
// change: the previous prefix is still cached.
func CacheDiff(prev, cur Report) Diff {
	if prev.Prefix.SystemSHA256 != cur.Prefix.SystemSHA256 {
		d := Diff{Changed: true, Message: -1, Reason: "system prompt changed"}
		for i := range min(len(prev.Sections), len(cur.Sections)) {
			p, c := prev.Sections[i], cur.Sections[i]
			if p.Name != c.Name {
				d.Section = c.Name
				d.Reason = fmt.Sprintf("system prompt changed: section %d is %q, was %q", i, c.Name, p.Name)
				return d
			}
			if p.SHA256 != c.SHA256 {
				d.Section = c.Name
				d.Reason = fmt.Sprintf("system prompt changed in section %q", c.Name)
				return d
			}
		}
		switch {
		case len(prev.Sections) != len(cur.Sections):
			d.Reason = fmt.Sprintf("system prompt changed: %d sections, was %d", len(cur.Sections), len(prev.Sections))
		case len(cur.Sections) > 0:
			d.Reason = "system prompt changed outside its named sections"
		}
		return d
	}
	for i := range min(len(prev.History), len(cur.History)) {
		if prev.History[i] != cur.History[i] {
			return Diff{Changed: true, Message: i, Reason: fmt.Sprintf("history message %d changed", i)}
		}
	}
	if len(cur.History) < len(prev.History) {
		i := len(cur.History)
		return Diff{Changed: true, Message: i, Reason: fmt.Sprintf("history message %d was removed: the history is shorter than before (%d messages, was %d)", i, len(cur.History), len(prev.History))}
	}
	return Diff{Message: -1, Reason: fmt.Sprintf("prefix unchanged: system prompt and %d history messages as before, %d new", len(prev.History), len(cur.History)-len(prev.History))}
}

// Output is the json format: the neutral messages with the report's fields
// beside them.
type Output struct {
	Messages []Message `json:"messages"`
	Report
}

// JSON writes the result in the json format, indented, ending in a newline.
func (r *Result) JSON() ([]byte, error) {
	return jsonout.Marshal(Output{Messages: r.Messages, Report: r.Report})
}

// ReadReport reads the report from a previous json-format output, for
// CacheDiff.
func ReadReport(data []byte) (Report, error) {
	var out struct {
		Report
		Messages json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(data, &out); err != nil {
		return Report{}, err
	}
	if out.Prefix.SystemSHA256 == "" {
		return Report{}, fmt.Errorf("no prefix report: not the json output of loom messages")
	}
	return out.Report, nil
}
