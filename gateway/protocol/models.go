package protocol

// Model lists: GET /v1/models in OpenAI's shape, and in Anthropic's when
// the client sends anthropic-version.

// Model is one entry of a list.
type Model struct {
	ID string
	// Target is the upstream model an alias maps to; "" for a model
	// served under its own id.
	Target string
}

// OpenAIModels is the list in OpenAI's shape. created is 0: loom does not
// know when a model was made, and reads no clock for it.
func OpenAIModels(models []Model) []byte {
	type entry struct {
		ID      string `json:"id"`
		Object  string `json:"object"`
		Created int64  `json:"created"`
		OwnedBy string `json:"owned_by"`
	}
	data := make([]entry, 0, len(models))
	for _, m := range models {
		data = append(data, entry{ID: m.ID, Object: "model", OwnedBy: "loom"})
	}
	return marshal(map[string]any{"object": "list", "data": data})
}

// AnthropicModels is the list in Anthropic's shape, one page holding all.
// created_at is the Unix epoch, for the same reason.
func AnthropicModels(models []Model) []byte {
	type entry struct {
		Type        string `json:"type"`
		ID          string `json:"id"`
		DisplayName string `json:"display_name"`
		CreatedAt   string `json:"created_at"`
	}
	data := make([]entry, 0, len(models))
	for _, m := range models {
		name := m.ID
		if m.Target != "" {
			name = m.ID + " (" + m.Target + " through loom)"
		}
		data = append(data, entry{Type: "model", ID: m.ID, DisplayName: name, CreatedAt: "1970-01-01T00:00:00Z"})
	}
	var first, last any
	if len(data) > 0 {
		first, last = data[0].ID, data[len(data)-1].ID
	}
	return marshal(map[string]any{"data": data, "has_more": false, "first_id": first, "last_id": last})
}
