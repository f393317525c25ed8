package gateway_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loomctx/loom/internal/fittest"
	"github.com/loomctx/loom/tokens"
)

// TestGatewayFitShrinksPrompt: a request whose system prompt alone passes
// the window. With all history gone, the prompt is rendered again within
// the room left, and the render budget gives up retrieved memories and
// skills catalogue entries before anything else; the last report says
// what went and why.
func TestGatewayFitShrinksPrompt(t *testing.T) {
	e := setup(t, "gateway:\n  models:\n    tight: {context_window: 4000, reserve_output: 500}\n")
	for i := range 60 {
		dir := filepath.Join(e.dir, "skills", fmt.Sprintf("tool-%02d", i))
		os.MkdirAll(dir, 0o755)
		desc := fmt.Sprintf("Skill %d: %s", i, fittest.Filler(i, 40))
		os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: tool-"+fmt.Sprintf("%02d", i)+"\ndescription: "+desc+"\n---\n\nBody.\n"), 0o644)
	}
	for i := range 12 {
		mem, _ := json.Marshal(map[string]string{"category": "personal_fact", "content": fmt.Sprintf("MEMORY-%02d %s", i, fittest.Filler(i, 30)), "user": "bo"})
		r, err := http.Post(e.base+"/v1/workspaces/default/memories", "application/json", bytes.NewReader(mem))
		if err != nil {
			t.Fatal(err)
		}
		r.Body.Close()
	}
	msgs := clientConversation(t, 4)
	res := e.post(t, "/v1/chat/completions", map[string]any{"model": "fake-model", "messages": msgs, "user": "bo"})
	readAll(t, res)
	full := msgText(e.up.last(t).Body["messages"].([]any)[0])
	res = e.post(t, "/v1/chat/completions", map[string]any{"model": "tight", "messages": msgs, "user": "bo"})
	if body := readAll(t, res); res.StatusCode != 200 {
		t.Fatalf("%d %s", res.StatusCode, body)
	}
	var got struct{ Messages []fittest.WireMessage }
	json.Unmarshal(e.up.last(t).Raw, &got)
	c, _ := tokens.Get(tokens.O200kBase)
	n := fittest.Tokens(c.Count, got.Messages)
	sys := got.Messages[0].Text()
	t.Logf("system prompt %d → %d tokens; request %d tokens; headers %s %s", c.Count(full), c.Count(sys), n, res.Header.Get("X-Loom-History-Dropped"), res.Header.Get("X-Loom-Dropped"))
	if c.Count(full) < 4000 {
		t.Fatalf("the full prompt is %d tokens; the test wants it over the window", c.Count(full))
	}
	if n > 3500 {
		t.Errorf("the upstream got %d tokens, over 3,500", n)
	}
	if !strings.Contains(sys, "MARKER-AGENTS-7f3") || !strings.Contains(sys, "CLIENT-SYSTEM-3e9") {
		t.Errorf("the shrunk prompt lost the agent's own text or the client's")
	}
	r, _ := http.Get(e.base + "/v1/workspaces/default/sessions/bo/last-report")
	var rep struct {
		Fit struct {
			SystemRoom int      `json:"system_room"`
			Reasons    []string `json:"reasons"`
		} `json:"fit"`
		Render struct {
			Sections []struct {
				Name, Status, Reason string
			} `json:"sections"`
		} `json:"render"`
	}
	json.NewDecoder(r.Body).Decode(&rep)
	r.Body.Close()
	if rep.Fit.SystemRoom == 0 || !strings.Contains(strings.Join(rep.Fit.Reasons, "\n"), "system prompt rendered again within") {
		t.Errorf("the fit report does not say the prompt was rendered again: %+v", rep.Fit)
	}
	var dropped []string
	for _, s := range rep.Render.Sections {
		if s.Status == "dropped" {
			dropped = append(dropped, s.Name)
		}
	}
	t.Logf("fit: %v; render dropped %d: %v", rep.Fit.Reasons, len(dropped), dropped)
	if !strings.Contains(full, "tool-59") || !strings.Contains(sys, "tool-00") {
		t.Errorf("the skills catalogue is not where the test expects it")
	}
	if len(dropped) == 0 || !strings.HasPrefix(dropped[0], "skill:") {
		t.Errorf("the render report should name the skills catalogue entries dropped: %v", dropped)
	}
	for _, name := range dropped {
		if strings.Contains(sys, strings.TrimPrefix(name, "skill:")) {
			t.Errorf("%s is reported dropped but is in the prompt", name)
		}
	}
}
