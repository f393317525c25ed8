package messages

// maxPreviousBytes bounds the previous turn's text handed to a memory
// search: its first words are all a search reads.
const maxPreviousBytes = 16 << 10

// PreviousTurn is the text of the last exchange in history: the last user
// message and the assistant's replies after it, runtime blocks removed,
// at most 16 KiB. A memory recall searches it beside the current message
// (see prompt.Builder.Recall); "" when history has no user message.
func PreviousTurn(history []Message) string {
	start := -1
	for i := len(history) - 1; i >= 0; i-- {
		if history[i].Role == RoleUser {
			start = i
			break
		}
	}
	if start < 0 {
		return ""
	}
	var out []byte
	for _, m := range history[start:] {
		if m.Role != RoleUser && m.Role != RoleAssistant {
			continue
		}
		text, _ := StripRuntime(m.Content.String())
		if len(out) > 0 {
			out = append(out, '\n')
		}
		out = append(out, text[:min(len(text), maxPreviousBytes-len(out))]...)
		if len(out) >= maxPreviousBytes {
			break
		}
	}
	return string(out)
}
