package mcpserver

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	sjson "github.com/segmentio/encoding/json"

	"github.com/loomctx/loom/internal/jsonscan"
	"github.com/loomctx/loom/server"
)

// toolHandler is a tool's typed handler, as mcp.AddTool takes it.
type toolHandler[In, Out any] func(context.Context, *mcp.CallToolRequest, In) (*mcp.CallToolResult, Out, error)

// addTool registers h as tool t, as mcp.AddTool would (the same input and
// output schemas advertised, the same arguments accepted, the same errors
// for bad ones, the same answers), but decoding the arguments itself. The
// SDK's typed path decodes them into a map, checks that against the
// schema, encodes it again and decodes that into In: with a 4 MiB
// argument a tools/call allocated 9 times its body there alone. Here a
// large argument list is checked on its skeleton and decoded once, in
// place (decodeArguments). Answers go the SDK's way (answerOf).
func addTool[In, Out any](srv *mcp.Server, t *mcp.Tool, h toolHandler[In, Out]) {
	tt := *t
	in, err := jsonschema.For[In](&jsonschema.ForOptions{})
	if err != nil {
		panic("mcpserver: " + t.Name + "'s input schema: " + err.Error()) // fixed types: caught by every test
	}
	inSchema, err := in.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true})
	if err != nil {
		panic("mcpserver: " + t.Name + "'s input schema: " + err.Error())
	}
	tt.InputSchema = in
	// A nil *T answer is sent as T's zero value when the schema is T's,
	// as the SDK does.
	var zero any
	var outSchema *jsonschema.Resolved
	if out := reflect.TypeFor[Out](); tt.OutputSchema != nil || out != reflect.TypeFor[any]() {
		s, _ := tt.OutputSchema.(*jsonschema.Schema)
		if s == nil {
			if out.Kind() == reflect.Pointer {
				out = out.Elem()
				zero = reflect.Zero(out).Interface()
			}
			if s, err = jsonschema.ForType(out, &jsonschema.ForOptions{}); err != nil {
				panic("mcpserver: " + t.Name + "'s output schema: " + err.Error())
			}
			tt.OutputSchema = s
		}
		if outSchema, err = s.Resolve(&jsonschema.ResolveOptions{ValidateDefaults: true}); err != nil {
			panic("mcpserver: " + t.Name + "'s output schema: " + err.Error())
		}
	}
	srv.AddTool(&tt, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		args, err := decodeArguments[In](req.Params.Arguments, inSchema)
		if err != nil {
			var res mcp.CallToolResult
			res.SetError(err)
			return &res, nil
		}
		res, answer, err := h(ctx, req, args)
		if err != nil {
			var res mcp.CallToolResult
			res.SetError(err)
			return &res, nil
		}
		var v any = answer
		if zero != nil && reflect.ValueOf(answer).IsNil() {
			v = zero
		}
		return answerOf(res, v, outSchema)
	})
}

// answerOf is what mcp.AddTool's handler makes of a tool's answer v: its
// JSON, checked against the output schema (with the schema's defaults
// applied, which encodes an object again), as the structured content, and
// as text when the result has no content of its own.
func answerOf(res *mcp.CallToolResult, v any, schema *jsonschema.Resolved) (*mcp.CallToolResult, error) {
	if res == nil {
		res = &mcp.CallToolResult{}
	}
	if v == nil {
		return res, nil
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("marshaling output: %w", err)
	}
	if schema != nil {
		if b, err = checkAnswer(b, schema); err != nil {
			return nil, fmt.Errorf("validating tool output: %w", err)
		}
	}
	res.StructuredContent = json.RawMessage(b)
	if res.Content == nil {
		res.Content = []mcp.Content{&mcp.TextContent{Text: string(b)}}
	} else if !bytes.HasPrefix(bytes.TrimLeft(b, " \t\r\n"), []byte("{")) {
		res.Content = append(res.Content, &mcp.TextContent{Text: string(b)})
	}
	return res, nil
}

// checkAnswer checks an answer's JSON against the output schema as the SDK
// does, and returns it as the SDK sends it.
func checkAnswer(b []byte, schema *jsonschema.Resolved) ([]byte, error) {
	var u any
	if len(b) > 0 {
		if err := json.Unmarshal(b, &u); err != nil {
			return nil, fmt.Errorf("unmarshaling output: %w", err)
		}
	}
	defaults := false
	if _, ok := u.(map[string]any); ok {
		defaults = true
	} else if u == nil && schema.Schema().Type == "object" {
		u, defaults = make(map[string]any), true
	}
	if defaults {
		if err := schema.ApplyDefaults(&u); err != nil {
			return nil, fmt.Errorf("applying schema defaults:\n%w", err)
		}
	}
	if err := schema.Validate(&u); err != nil {
		return nil, err
	}
	if !defaults {
		return b, nil
	}
	out, err := json.Marshal(u)
	if err != nil {
		return nil, fmt.Errorf("marshalling with defaults: %v", err)
	}
	return out, nil
}

// Argument lists from minSkeletonArgs bytes are checked on their skeleton,
// which empties strings of minSkeletonString bytes or more.
const (
	minSkeletonArgs   = 64 << 10
	minSkeletonString = 64
)

// decodeArguments checks a tool's arguments against its input schema and
// decodes them into an In. A small list goes the SDK's way
// (decodeArgumentsPlain). A large one is checked on its skeleton: a
// string's length or content never decides whether loom's arguments fit
// their schema, only names, types and nesting do. Then it is decoded once,
// in place. Anything the skeleton or the direct decoding refuses goes the
// SDK's way for its exact error (a refused call's cost does not matter);
// TestDecodeArgumentsAgrees holds the two ways to the same values and
// errors.
func decodeArguments[In any](args json.RawMessage, schema *jsonschema.Resolved) (In, error) {
	if err := boundArguments(args); err != nil {
		var in In
		return in, err
	}
	if len(args) < minSkeletonArgs || !json.Valid(args) {
		return decodeArgumentsPlain[In](args, schema)
	}
	var v map[string]any
	if json.Unmarshal(jsonscan.Skeleton(args, minSkeletonString), &v) != nil || v == nil {
		return decodeArgumentsPlain[In](args, schema)
	}
	if u := any(v); schema.Validate(&u) != nil {
		return decodeArgumentsPlain[In](args, schema)
	}
	var in In
	if json.Unmarshal(args, &in) != nil {
		// A number the schema takes but In's field does not as written
		// (1e2 for an integer), which the SDK's second encoding rewrites.
		return decodeArgumentsPlain[In](args, schema)
	}
	return in, nil
}

// Bounds on an argument list's shape, checked before it is decoded (into
// a map and a list each, which took 12 times the bytes of a list of short
// names): no loom tool takes more than a few arguments, and
// render_prompt's tools are bounded as the HTTP render route's are.
const (
	maxArguments = 100
	maxTools     = server.MaxTools
)

// boundArguments refuses an argument list of more than maxArguments
// members, or whose tools list has more than maxTools names.
func boundArguments(args []byte) error {
	if len(args) < 2*maxArguments || !json.Valid(args) {
		return nil // too short to break a bound; or the SDK's own error
	}
	if _, more, _ := jsonscan.ObjectLen(args, maxArguments); more {
		return fmt.Errorf("validating \"arguments\": more than %d arguments", maxArguments)
	}
	if tools, found := jsonscan.Lookup(args, "tools"); found {
		if _, more, _ := jsonscan.ArrayLen(tools, maxTools); more {
			return fieldError("tools", "more than %d tools", maxTools)
		}
	}
	return nil
}

// decodeArgumentsPlain is what mcp.AddTool's handler does with a tool's
// arguments, step by step: decode them into a map (none is an empty
// one), apply the schema's defaults, validate, encode the map again and
// decode that into an In. It decodes with the SDK's own decoder
// (sdkUnmarshal), so errors are worded as the SDK words them.
func decodeArgumentsPlain[In any](args json.RawMessage, schema *jsonschema.Resolved) (In, error) {
	var in In
	v := make(map[string]any)
	if len(args) > 0 {
		if err := sdkUnmarshal(args, &v); err != nil {
			return in, fmt.Errorf("validating \"arguments\": unmarshaling arguments: %w", err)
		}
	}
	var u any = v
	if err := schema.ApplyDefaults(&u); err != nil {
		return in, fmt.Errorf("validating \"arguments\": applying schema defaults:\n%w", err)
	}
	if err := schema.Validate(&u); err != nil {
		return in, fmt.Errorf("validating \"arguments\": %v", err)
	}
	b, err := json.Marshal(u)
	if err != nil {
		return in, fmt.Errorf("validating \"arguments\": marshalling with defaults: %v", err)
	}
	if err := sdkUnmarshal(b, &in); err != nil {
		return in, err
	}
	return in, nil
}

// sdkUnmarshal decodes as the MCP SDK does (its internal/json): with
// segmentio's decoder, field names matched exactly. The SDK has already
// checked the nesting depth of the whole message.
func sdkUnmarshal(b []byte, v any) error {
	dec := sjson.NewDecoder(bytes.NewReader(b))
	dec.DontMatchCaseInsensitiveStructFields()
	return dec.Decode(v)
}
