package inspector

import (
	"context"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/loomctx/loom/memory"
	"github.com/loomctx/loom/server"
)

// The memory tab shows what a message would recall beside it, each memory
// with its score and why; with retrieval: priority it says nothing is
// recalled; a message with no searchable word says so and falls back to
// priority order; the message control is escaped and kept in the query.
func TestMemoryTabShowsRecall(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "AGENTS.md"), []byte("# Agents\n"), 0o644)
	store, err := memory.Open(root)
	if err != nil {
		t.Fatal(err)
	}
	// The oldest memory is the one the message is about; 120 newer
	// ones fill the system prompt's half of the 1,000-token budget, so
	// it is left out there and can only be recalled.
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ms := []memory.Memory{{ID: "target", Category: "personal_fact", Content: "Ana's sister lives in Lyon near the river", CreatedAt: t0}}
	for i := range 120 {
		ms = append(ms, memory.Memory{ID: fmt.Sprintf("f%03d", i), Category: "personal_fact",
			Content: fmt.Sprintf("Filler note number %d about the weekly groceries", i), CreatedAt: t0.Add(time.Duration(i+1) * time.Minute)})
	}
	if err := store.Import(context.Background(), ms); err != nil {
		t.Fatal(err)
	}
	store.Close()

	ts := serveInspector(t, server.Options{Dir: root})
	view := func(message string) string {
		t.Helper()
		resp, err := http.Get(ts.URL + "/inspect/default/view?message=" + url.QueryEscape(message))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 200 {
			t.Fatalf("view: %d\n%s", resp.StatusCode, b)
		}
		return string(b)
	}
	recalled := func(body string) string {
		i := strings.Index(body, `<ul class="memories recalled" id="recalled">`)
		if i < 0 {
			return ""
		}
		return body[i : i+strings.Index(body[i:], "</ul>")]
	}

	body := view("Where does my sister live?")
	if !strings.Contains(body, "Selected for the system prompt") || strings.Contains(body[:strings.Index(body, "Recalled beside")], "Lyon") {
		t.Error("the system prompt's selection holds the target memory, or is not labelled as such")
	}
	list := recalled(body)
	li := regexp.MustCompile(`<li data-id="target"><span class="score" title="score">([0-9.]+)</span> <span class="cat">personal_fact</span> Ana&#39;s sister lives in Lyon near the river <span class="why">matched sister, lives</span> <span class="when">\d+ tokens</span></li>`).FindStringSubmatch(list)
	if li == nil || li[1] == "0.00" {
		t.Errorf("the recalled list does not show the target with a score and why:\n%s", list)
	}
	if !strings.Contains(body, `searched: sister, live`) {
		t.Errorf("the searched words are not shown:\n%s", body)
	}

	// No searchable word: priority order, and the page says why.
	body = view("??? !!!")
	if !strings.Contains(body, "searched: no words; "+memory.FallbackNoTerms+", so the memories come in priority order") ||
		!strings.Contains(recalled(body), `<span class="why">priority order (`+html.EscapeString(memory.FallbackNoTerms)+`)</span>`) {
		t.Errorf("fallback not shown:\n%s", recalled(body))
	}

	// The control's value is escaped where it is printed.
	resp, err := http.Get(ts.URL + "/inspect/default/?message=" + url.QueryEscape(`"><script>x</script> sister`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if strings.Contains(string(b), "<script>x</script>") || !strings.Contains(string(b), `name="message" value="&#34;&gt;&lt;script&gt;x&lt;/script&gt; sister"`) {
		t.Errorf("message control not escaped:\n%.2000s", b)
	}

	// Without a message, a hint; with retrieval: priority, nothing recalled.
	if body := view(""); !strings.Contains(body, "Type a message above") || recalled(body) != "" {
		t.Error("no hint without a message")
	}
	os.WriteFile(filepath.Join(root, "loom.yaml"), []byte("memory:\n  retrieval: priority\n"), 0o644)
	deadline := time.Now().Add(5 * time.Second)
	for {
		body := view("Where does my sister live?")
		if strings.Contains(body, "memory.retrieval is priority") && recalled(body) == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("retrieval: priority not shown:\n%s", body)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
