package llm

import "testing"

// A tool's schema reaches the Messages API as an object that names its
// type: as the client sent it when it names one, with "type":"object"
// added when it does not, and refused when it is not an object.
func TestInputSchema(t *testing.T) {
	for in, want := range map[string]string{
		``:     `{"type":"object"}`,
		`null`: `{"type":"object"}`,
		`{"type":"object", "properties":{"b":{},"a":{}}}`: `{"type":"object", "properties":{"b":{},"a":{}}}`,
		`{"properties":{"x":{"type":"string"}}}`:          `{"properties":{"x":{"type":"string"}},"type":"object"}`,
		`{}`:                                              `{"type":"object"}`,
	} {
		got, err := inputSchema([]byte(in))
		if err != nil || string(got) != want {
			t.Errorf("inputSchema(%s) = %s, %v; want %s", in, got, err, want)
		}
	}
	for _, in := range []string{`[]`, `"object"`, `7`, `{`} {
		if got, err := inputSchema([]byte(in)); err == nil {
			t.Errorf("inputSchema(%s) = %s, want an error", in, got)
		}
	}
}
