package jsonout

import (
	"strings"
	"testing"

	"github.com/loomctx/loom/workspace"
)

func TestMarshalNoHTMLEscaping(t *testing.T) {
	b, err := Marshal(map[string]string{"text": "<b> & </b>"})
	if err != nil {
		t.Fatal(err)
	}
	if string(b) != "{\n  \"text\": \"<b> & </b>\"\n}\n" {
		t.Errorf("got %q", b)
	}
	l, _ := Line([]int{1, 2})
	if string(l) != "[1,2]\n" {
		t.Errorf("line %q", l)
	}
}

// A diagnostic has one JSON shape and reads back as itself.
func TestDiagnosticShape(t *testing.T) {
	ds := []workspace.Diagnostic{
		{Path: "skills/a/SKILL.md", Line: 3, Severity: workspace.Error, Code: "skill.yaml", Message: "bad <yaml>"},
		{Path: "AGENTS.md", Severity: workspace.Warning, Code: "read.binary", Message: "binary"},
	}
	b, err := Marshal(ds)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"path": "skills/a/SKILL.md",
    "line": 3,
    "severity": "error",
    "code": "skill.yaml",
    "message": "bad <yaml>"`) {
		t.Errorf("shape:\n%s", b)
	}
	if err := RoundTrip[[]workspace.Diagnostic](b); err != nil {
		t.Error(err)
	}
	if err := RoundTrip[[]workspace.Diagnostic]([]byte(`[{"path":"a","line":0,"severity":"fatal","code":"x","message":"m"}]` + "\n")); err == nil {
		t.Error("an unknown severity reads back")
	}
}

// RoundTrip catches a type that drops or invents data.
func TestRoundTripCatchesLoss(t *testing.T) {
	type lossy struct {
		A int `json:"a"`
		B int `json:"-"`
	}
	if err := RoundTrip[lossy]([]byte("{\n  \"a\": 1,\n  \"b\": 2\n}\n")); err == nil {
		t.Error("unknown field b accepted")
	}
	type withDefault struct {
		A int `json:"a,omitempty"`
	}
	if err := RoundTrip[withDefault]([]byte("{\n  \"a\": 0\n}\n")); err == nil {
		t.Error("a zero written out but dropped on re-encoding: not reported")
	}
}
