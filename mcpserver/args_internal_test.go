package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/loomctx/loom/internal/alloctest"
)

// echo is a tool handler that answers with the arguments it was given.
func echo[In any](_ context.Context, _ *mcp.CallToolRequest, in In) (*mcp.CallToolResult, In, error) {
	return nil, in, nil
}

// echoServers registers an echo tool for each of loom's input types on two
// servers, one through mcp.AddTool (the SDK's own decoding: the
// reference) and one through addTool, and returns a client session to
// each.
func echoServers(t *testing.T) (ref, loom *mcp.ClientSession) {
	t.Helper()
	connect := func(add func(*mcp.Server)) *mcp.ClientSession {
		srv := mcp.NewServer(&mcp.Implementation{Name: "t", Version: "1"}, nil)
		add(srv)
		ct, st := mcp.NewInMemoryTransports()
		if _, err := srv.Connect(context.Background(), st, nil); err != nil {
			t.Fatal(err)
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(context.Background(), ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	ref = connect(func(s *mcp.Server) {
		mcp.AddTool(s, &mcp.Tool{Name: "remember"}, echo[RememberInput])
		mcp.AddTool(s, &mcp.Tool{Name: "recall"}, echo[RecallInput])
		mcp.AddTool(s, &mcp.Tool{Name: "forget"}, echo[ForgetInput])
		mcp.AddTool(s, &mcp.Tool{Name: "render_prompt"}, echo[RenderInput])
		mcp.AddTool(s, &mcp.Tool{Name: "count_tokens"}, echo[CountInput])
	})
	loom = connect(func(s *mcp.Server) {
		addTool(s, &mcp.Tool{Name: "remember"}, echo[RememberInput])
		addTool(s, &mcp.Tool{Name: "recall"}, echo[RecallInput])
		addTool(s, &mcp.Tool{Name: "forget"}, echo[ForgetInput])
		addTool(s, &mcp.Tool{Name: "render_prompt"}, echo[RenderInput])
		addTool(s, &mcp.Tool{Name: "count_tokens"}, echo[CountInput])
	})
	return ref, loom
}

// addTool decodes a tool's arguments as mcp.AddTool does: the same values
// and the same errors, for small argument lists (decoded the SDK's way)
// and large ones (checked on their skeleton, decoded in place), and it
// advertises the same schemas.
func TestDecodeArgumentsAgrees(t *testing.T) {
	ref, loom := echoServers(t)
	ctx := context.Background()
	refTools, err := ref.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	loomTools, err := loom.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if a, b := jsonOf(t, refTools), jsonOf(t, loomTools); a != b {
		t.Errorf("tools/list differs:\nSDK:  %s\nloom: %s", a, b)
	}
	// The skeleton check is sound only while no input schema looks at a
	// string's content or length.
	for _, tool := range loomTools.Tools {
		if b := jsonOf(t, tool.InputSchema); strings.Contains(b, `"enum"`) || strings.Contains(b, `"pattern"`) ||
			strings.Contains(b, `"minLength"`) || strings.Contains(b, `"maxLength"`) || strings.Contains(b, `"format"`) || strings.Contains(b, `"const"`) {
			t.Errorf("%s's input schema constrains strings, which the skeleton check empties: %s", tool.Name, b)
		}
	}
	long := `"` + strings.Repeat("x", minSkeletonArgs) + `"`
	cases := []struct{ tool, args string }{
		{"remember", `{"content":"a fact","category":"personal_fact"}`},
		{"remember", `{"content":"a fact","user":"ada","supersedes":"m1"}`},
		{"remember", `{}`},
		{"remember", `null`},
		{"remember", `{"content":5}`},
		{"remember", `{"content":null}`},
		{"remember", `{"content":"a","Content":"b"}`},
		{"remember", `{"content":"a","extra":1}`},
		{"remember", `{"content":"a","content":"b"}`},
		{"remember", `{"content":"caf\u00e9 \ud83d\ude00 \\ \" \n"}`},
		{"remember", `{"content":["a"]}`},
		{"remember", `["a"]`},
		{"remember", `"a"`},
		{"remember", `{"content":` + long + `}`},
		{"remember", `{"content":` + long + `,"category":5}`},
		{"remember", `{"content":` + long + `,"category":` + long + `,"extra":true}`},
		{"remember", `{"content":` + long + `,"user":null}`},
		{"remember", `{"category":` + long + `}`},
		{"remember", `{"content":` + long + `,"content":"short"}`},
		{"recall", `{}`},
		{"recall", `{"limit":10,"all":true,"query":"tea"}`},
		{"recall", `{"limit":1e2}`},
		{"recall", `{"limit":100.0}`},
		{"recall", `{"limit":1.5}`},
		{"recall", `{"limit":-3}`},
		{"recall", `{"limit":"10"}`},
		{"recall", `{"limit":1e30}`},
		{"recall", `{"all":"yes"}`},
		{"recall", `{"query":` + long + `,"limit":1e2}`},
		{"recall", `{"query":` + long + `,"limit":1.5}`},
		{"recall", `{"query":` + long + `,"limit":` + long + `}`},
		{"recall", `{"query":` + long + `,"all":false,"limit":3}`},
		{"forget", `{"id":"m1"}`},
		{"forget", `{"id":""}`},
		{"forget", `{"ID":"m1"}`},
		{"render_prompt", `{"tools":["read","write"],"budget":100,"test_mode":true}`},
		{"render_prompt", `{"tools":"read"}`},
		{"render_prompt", `{"tools":[1]}`},
		{"render_prompt", `{"tools":null}`},
		{"render_prompt", `{"tools":[` + long + `,"x"],"now":"2026-01-01T00:00:00Z"}`},
		{"render_prompt", `{"tools":[` + long + `,5]}`},
		{"count_tokens", `{"text":` + long + `,"encoding":"cl100k_base"}`},
		{"count_tokens", `{"text":` + long + `,"model":{}}`},
		{"count_tokens", `{"text":"` + strings.Repeat(`\u00e9\n`, minSkeletonArgs/4) + `"}`},
		{"count_tokens", `{"encoding":"o200k_base"}`},
	}
	for _, c := range cases {
		params := &mcp.CallToolParams{Name: c.tool, Arguments: json.RawMessage(c.args)}
		want, werr := ref.CallTool(ctx, params)
		got, gerr := loom.CallTool(ctx, params)
		name := c.tool + " " + c.args
		if len(name) > 120 {
			name = name[:120] + "…"
		}
		if (werr == nil) != (gerr == nil) || (werr != nil && werr.Error() != gerr.Error()) {
			t.Errorf("%s: error %v, SDK's %v", name, gerr, werr)
			continue
		}
		if a, b := jsonOf(t, want), jsonOf(t, got); a != b {
			t.Errorf("%s:\nloom: %.400s\nSDK:  %.400s", name, b, a)
		}
	}
}

func jsonOf(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// Decoding a tool's arguments allocates at most 4 times them, for an
// argument list as long as the HTTP route takes (the SDK's typed path
// took 9 times; the route's own share is TestMountedToolCallPeakMemory's).
func TestDecodeArgumentsPeakMemory(t *testing.T) {
	schemaOf := func(t *testing.T, v any) *jsonschema.Resolved {
		s, err := jsonschema.ForType(reflect.TypeOf(v), &jsonschema.ForOptions{})
		if err != nil {
			t.Fatal(err)
		}
		r, err := s.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	long := strings.Repeat("x", 4<<20)
	names := strings.Repeat(`"`+strings.Repeat("n", 4<<10)+`",`, maxTools-1)
	for _, c := range []struct {
		name, args string
		decode     func(args []byte) error
	}{
		{"remember, 4 MiB content", `{"content":"` + long + `","category":"personal_fact"}`, func(b []byte) error {
			_, err := decodeArguments[RememberInput](b, schemaOf(t, RememberInput{}))
			return err
		}},
		{"count_tokens, 4 MiB text", `{"text":"` + long + `"}`, func(b []byte) error {
			_, err := decodeArguments[CountInput](b, schemaOf(t, CountInput{}))
			return err
		}},
		{"render_prompt, 1,000 tools of 4 KiB", `{"tools":[` + names + `"last"]}`, func(b []byte) error {
			_, err := decodeArguments[RenderInput](b, schemaOf(t, RenderInput{}))
			return err
		}},
		{"render_prompt, the most tools, 100-byte names", `{"tools":[` + strings.Repeat(`"`+strings.Repeat("t", 98)+`",`, maxTools-1) + `"last"]}`, func(b []byte) error {
			_, err := decodeArguments[RenderInput](b, schemaOf(t, RenderInput{}))
			return err
		}},
		{"render_prompt, the most tools, short names", `{"tools":[` + strings.Repeat(`"t",`, maxTools-1) + `"last"]}`, func(b []byte) error {
			_, err := decodeArguments[RenderInput](b, schemaOf(t, RenderInput{}))
			return err
		}},
		{"render_prompt, a million tools (refused)", `{"tools":[` + strings.Repeat(`"t",`, 1_000_000) + `"last"]}`, func(b []byte) error {
			_, err := decodeArguments[RenderInput](b, schemaOf(t, RenderInput{}))
			if err == nil || !strings.Contains(err.Error(), "argument tools: more than 1000 tools") {
				return fmt.Errorf("not refused: %v", err)
			}
			return nil
		}},
		{"remember, 500,000 arguments (refused)", `{` + strings.Repeat(`"content":"x",`, 500_000) + `"category":"c"}`, func(b []byte) error {
			_, err := decodeArguments[RememberInput](b, schemaOf(t, RememberInput{}))
			if err == nil || !strings.Contains(err.Error(), "more than 100 arguments") {
				return fmt.Errorf("not refused: %v", err)
			}
			return nil
		}},
	} {
		var err error
		args := []byte(c.args)
		limit := 4.0
		if len(args) < minSkeletonArgs {
			limit = 1e9 // logged, not bounded: see below
		}
		alloctest.Bound(t, c.name, len(args), limit, func() { err = c.decode(args) })
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
		}
	}
}

// An argument list under minSkeletonArgs is decoded the SDK's way and
// not held to a multiple: the most short tool names a call may hold (4
// KB) take some 90 times that (350 KB), mostly the schema check of each
// name in the SDK's map; above it, the skeleton keeps a list of 100-byte
// names within 4.
