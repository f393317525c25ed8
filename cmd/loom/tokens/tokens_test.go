package tokens

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/loomctx/loom/cmd/loom/cmdutil"
	"github.com/loomctx/loom/tokens"
)

func TestNewCmdTokensFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    TokensOptions
		wantErr string
	}{
		{name: "stdin", args: nil, want: TokensOptions{}},
		{name: "dash", args: []string{"-"}, want: TokensOptions{File: "-"}},
		{name: "file and model", args: []string{"a.md", "--model", "gpt-4", "--json"}, want: TokensOptions{File: "a.md", Model: "gpt-4", JSON: true}},
		{name: "encoding", args: []string{"-e", "chars4", "--normalize", "a.md"}, want: TokensOptions{File: "a.md", Encoding: "chars4", Normalize: true}},
		{name: "both", args: []string{"--encoding", "cl100k_base", "--model", "gpt-4"}, wantErr: "--encoding and --model cannot be used together"},
		{name: "two files", args: []string{"a", "b"}, wantErr: "tokens takes at most one file, got 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ios, _, _, _ := cmdutil.Test()
			var got *TokensOptions
			cmd := NewCmdTokens(ios, func(o *TokensOptions) error { got = o; return nil })
			cmd.SetArgs(tt.args)
			cmd.SetOut(ios.Out)
			cmd.SetErr(ios.ErrOut)
			err := cmd.Execute()
			if tt.wantErr != "" {
				var fe *cmdutil.FlagError
				if !errors.As(err, &fe) || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want usage error %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got.IO = nil
			if *got != tt.want {
				t.Errorf("options = %+v, want %+v", *got, tt.want)
			}
		})
	}
}

func run(t *testing.T, opts TokensOptions, stdin string) (out, errOut string, err error) {
	t.Helper()
	ios, in, o, e := cmdutil.Test()
	in.WriteString(stdin)
	opts.IO = ios
	err = tokensRun(&opts)
	return o.String(), e.String(), err
}

func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestTokensRun(t *testing.T) {
	// "hello", " world", "\n": 3 tokens in both exact encodings; 12 runes
	// make 3 for chars4 too, so the encodings are told apart below by other
	// texts.
	out, errOut, err := run(t, TokensOptions{}, "hello world\n")
	if err != nil || out != "3\n" || errOut != "" {
		t.Fatalf("stdin: out %q, errOut %q, err %v", out, errOut, err)
	}

	p := writeFile(t, "prompt.md", "日本語のテキスト") // 8 runes: chars4 = 2
	out, _, err = run(t, TokensOptions{File: p, Encoding: "chars4"}, "")
	if err != nil || out != "2\n" {
		t.Fatalf("chars4: out %q, err %v", out, err)
	}

	out, _, err = run(t, TokensOptions{File: "-", JSON: true}, "hello world\n")
	if want := `{"encoding":"o200k_base","tokens":3,"bytes":12}` + "\n"; err != nil || out != want {
		t.Errorf("json: out %q, want %q (err %v)", out, want, err)
	}

	out, errOut, err = run(t, TokensOptions{Model: "gpt-4", JSON: true}, "hello world\n")
	if want := `{"encoding":"cl100k_base","tokens":3,"bytes":12,"model":"gpt-4"}` + "\n"; err != nil || out != want || errOut != "" {
		t.Errorf("model: out %q, want %q (err %v, errOut %q)", out, want, err, errOut)
	}

	out, errOut, err = run(t, TokensOptions{Model: "claude-sonnet-4", JSON: true}, "hello world\n")
	if want := `{"encoding":"o200k_base","tokens":3,"bytes":12,"model":"claude-sonnet-4","fallback":true}` + "\n"; err != nil || out != want {
		t.Errorf("fallback: out %q, want %q (err %v)", out, want, err)
	}
	if want := `loom: warning: <stdin>: unknown model "claude-sonnet-4": counted with o200k_base` + "\n"; errOut != want {
		t.Errorf("fallback: errOut %q, want %q", errOut, want)
	}
}

// TestTokensCRLF pins the documented choice: text is counted as given
// unless --normalize asks for what a workspace read would produce.
func TestTokensCRLF(t *testing.T) {
	raw := "\uFEFFfirst line\r\nsecond line\r\n"
	p := writeFile(t, "crlf.md", raw) // 3 + 10 + 2 + 11 + 2 = 28 bytes
	c, _ := tokens.Uncached(tokens.O200kBase)
	asGiven := c.Count(raw)
	normal := c.Count("first line\nsecond line\n")
	if asGiven == normal {
		t.Fatalf("test text does not tell the modes apart (%d tokens both)", asGiven)
	}

	out, _, err := run(t, TokensOptions{File: p, JSON: true}, "")
	if want := `{"encoding":"o200k_base","tokens":` + itoa(asGiven) + `,"bytes":28}` + "\n"; err != nil || out != want {
		t.Errorf("as given: out %q, want %q (err %v)", out, want, err)
	}
	out, _, err = run(t, TokensOptions{File: p, JSON: true, Normalize: true}, "")
	if want := `{"encoding":"o200k_base","tokens":` + itoa(normal) + `,"bytes":28}` + "\n"; err != nil || out != want {
		t.Errorf("normalized: out %q, want %q (err %v)", out, want, err)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

func TestTokensInvalidUTF8(t *testing.T) {
	p := writeFile(t, "bad.txt", "caf\xc3 ok")
	out, errOut, err := run(t, TokensOptions{File: p}, "")
	c, _ := tokens.Get(tokens.O200kBase)
	if want := itoa(c.Count("caf\uFFFD ok")) + "\n"; err != nil || out != want {
		t.Errorf("out %q, want %q (err %v)", out, want, err)
	}
	if want := "loom: warning: " + p + ": invalid UTF-8 replaced with U+FFFD\n"; errOut != want {
		t.Errorf("errOut %q, want %q", errOut, want)
	}
}

func TestTokensErrors(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "nope.md")
	_, _, err := run(t, TokensOptions{File: missing}, "")
	if err == nil || !strings.Contains(err.Error(), missing) || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: err = %v", err)
	}
	var fe *cmdutil.FlagError
	if errors.As(err, &fe) {
		t.Error("a missing file is a failure (exit 1), not a usage error")
	}

	_, _, err = run(t, TokensOptions{Encoding: "p50k_base"}, "x")
	if !errors.As(err, &fe) || !strings.Contains(err.Error(), "valid: o200k_base, cl100k_base, chars4") {
		t.Errorf("unknown encoding: err = %v, want a usage error listing the encodings", err)
	}

	_, _, err = run(t, TokensOptions{File: t.TempDir()}, "")
	if err == nil {
		t.Error("a directory was counted")
	}
}

func TestTokensEmpty(t *testing.T) {
	out, _, err := run(t, TokensOptions{JSON: true}, "")
	if want := `{"encoding":"o200k_base","tokens":0,"bytes":0}` + "\n"; err != nil || out != want {
		t.Errorf("out %q, want %q (err %v)", out, want, err)
	}
}
