package server_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/loomctx/loom/server"
)

// GET .../memories?q= ranks the user's scope by relevance, best first,
// with scores; any text is words; bad limits are named.
func TestMemorySearch(t *testing.T) {
	_, c := newServer(t, server.Options{})
	base := "/v1/workspaces/default/memories"
	for _, m := range []map[string]string{
		{"category": "personal_fact", "content": "Ana runs marathons in the spring", "user": "ana"},
		{"category": "personal_fact", "content": "Ana keeps bees", "user": "ana"},
		{"category": "personal_fact", "content": "Bob runs a bakery", "user": "bob"},
		{"category": "global_rule", "content": "Keep answers short when running reports"},
	} {
		if r := c.do("POST", base, m); r.Status != 201 {
			t.Fatalf("add: %d %s", r.Status, r.Body)
		}
	}
	var hits server.MemoryHits
	r := c.do("GET", base+"?user=ana&q="+url.QueryEscape(`is she "running" NEAR(marathon*)?`), nil)
	if r.Status != 200 {
		t.Fatalf("search: %d %s", r.Status, r.Body)
	}
	r.decode(t, &hits)
	if len(hits.Memories) != 2 || hits.Memories[0].Content != "Ana runs marathons in the spring" || hits.Memories[1].User != "" ||
		hits.Memories[0].Score < hits.Memories[1].Score || hits.Memories[1].Score <= 0 {
		t.Fatalf("search: %+v", hits)
	}
	c.do("GET", base+"?user=ana&limit=1&q=running", nil).decode(t, &hits)
	if len(hits.Memories) != 1 {
		t.Errorf("limit 1: %+v", hits)
	}
	c.do("GET", base+"?q="+url.QueryEscape("the of ???"), nil).decode(t, &hits)
	if hits.Memories == nil || len(hits.Memories) != 0 {
		t.Errorf("no searchable word: %+v", hits)
	}
	for _, bad := range []string{"?q=x&limit=0", "?q=x&limit=abc", "?q=x&limit=1001", "?q=" + strings.Repeat("a", 70000)} {
		r := c.do("GET", base+bad, nil)
		if r.Status != 400 {
			t.Errorf("%.30s: %d %s", bad, r.Status, r.Body)
		}
	}
}
