package mcpserver_test

import (
	"strings"
	"testing"

	"github.com/loomctx/loom/mcpserver"
)

// recall with a query ranks by relevance, best first, with scores and the
// words each matched; hostile text is words.
func TestRecallQuery(t *testing.T) {
	root := testWorkspace(t)
	_, c := connect(t, root, mcpserver.Options{})
	for _, m := range []map[string]any{
		{"content": "Ana runs marathons in the spring.", "category": "personal_fact", "user": "ana"},
		{"content": "Ana keeps bees on the roof.", "category": "personal_fact", "user": "ana"},
		{"content": "Bob runs a bakery.", "category": "personal_fact", "user": "bob"},
		{"content": "Keep answers short when running reports.", "category": "global_rule"},
	} {
		if e := callTool(t, c, "remember", m, nil); e != "" {
			t.Fatal(e)
		}
	}
	var rc struct {
		Memories []struct{ Content, User string } `json:"memories"`
		Matched  int                              `json:"matched"`
		Scores   []float64                        `json:"scores"`
		Why      [][]string                       `json:"why"`
	}
	if e := callTool(t, c, "recall", map[string]any{"query": `Is she "running" NEAR(marathon*)?`, "user": "ana"}, &rc); e != "" {
		t.Fatal(e)
	}
	if rc.Matched != 2 || len(rc.Memories) != 2 || rc.Memories[0].Content != "Ana runs marathons in the spring." || rc.Memories[1].User != "" {
		t.Fatalf("recall query: %+v", rc)
	}
	if len(rc.Scores) != 2 || rc.Scores[0] < rc.Scores[1] || rc.Scores[1] <= 0 || strings.Join(rc.Why[0], ",") != "runs,marathons" {
		t.Errorf("scores %v, why %q", rc.Scores, rc.Why)
	}
	rc.Memories, rc.Matched = nil, 0
	if e := callTool(t, c, "recall", map[string]any{"query": "running", "user": "ana", "category": "global_rule"}, &rc); e != "" || rc.Matched != 1 || rc.Memories[0].User != "" {
		t.Errorf("recall query with category: %q %+v", e, rc)
	}
	if e := callTool(t, c, "recall", map[string]any{"query": "running", "all": true}, nil); !strings.Contains(e, "all") {
		t.Errorf("query with all: %q", e)
	}
	if e := callTool(t, c, "recall", map[string]any{"query": strings.Repeat("x ", 40000)}, nil); !strings.Contains(e, "query") {
		t.Errorf("long query: %q", e)
	}
}
