// Package tokens is the `loom tokens` command: it counts the tokens of a
// file or of standard input.
package tokens

import (
	"fmt"
	"strconv"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/loomctx/loom/cmd/loom/cmdutil"
	"github.com/loomctx/loom/cmd/loom/shared"
	"github.com/loomctx/loom/internal/jsonout"
	"github.com/loomctx/loom/tokens"
	"github.com/loomctx/loom/workspace"
)

// TokensOptions holds what `loom tokens` was asked to do.
type TokensOptions struct {
	IO *cmdutil.IOStreams

	File      string // path, or "-" or "" for standard input
	Example   string // when set, File is a file of this built-in example
	Encoding  string
	Model     string
	JSON      bool
	Normalize bool
}

// NewCmdTokens returns the `loom tokens` command. runF replaces the run
// function in tests; nil means tokensRun.
func NewCmdTokens(ios *cmdutil.IOStreams, runF func(*TokensOptions) error) *cobra.Command {
	opts := &TokensOptions{IO: ios}
	cmd := &cobra.Command{
		Use:   "tokens [FILE|-]",
		Short: "Count the tokens of a file or of standard input",
		Long: `Count the tokens of FILE, or of standard input when FILE is "-" or absent,
and print the number alone.

The text is counted as given: a byte-order mark and CRLF line ends count
as the characters they are, the way tiktoken would count the same bytes.
Invalid UTF-8 is replaced with U+FFFD first, with a warning. With
--normalize, the text is first normalised the way loom reads workspace
files (byte-order mark dropped, CRLF turned into LF), so the count is what
the file would cost inside a rendered prompt.

The encoding is o200k_base unless --encoding or --model says otherwise.
Encodings: o200k_base, cl100k_base (exact), chars4 (one token per four
characters, an estimate). --model picks the encoding of an OpenAI model
(gpt-4o, gpt-4.1, gpt-5, o-series: o200k_base; gpt-4, gpt-3.5: cl100k_base);
for any other model it counts with o200k_base and says so.

--json prints {"encoding", "tokens", "bytes"}, where bytes is the size of
the input as read; with --model it adds "model", and "fallback": true when
the model was not recognised.

With --example NAME, FILE is a file of that built-in example workspace
(AGENTS.md, memory/MEMORY.md, ...).`,
		Example: `  loom tokens AGENTS.md
  loom tokens --model gpt-4 --json prompt.md
  cat memory/MEMORY.md | loom tokens --encoding cl100k_base
  loom tokens --example assistant SOUL.md`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) > 1 {
				return cmdutil.FlagErrorf("tokens takes at most one file, got %d", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.File = args[0]
			}
			if opts.Example != "" && (opts.File == "" || opts.File == "-") {
				return cmdutil.FlagErrorf("--example needs the example's file to count, such as: loom tokens --example %s AGENTS.md", opts.Example)
			}
			if cmd.Flags().Changed("encoding") && cmd.Flags().Changed("model") {
				return cmdutil.FlagErrorf("--encoding and --model cannot be used together")
			}
			if runF != nil {
				return runF(opts)
			}
			return tokensRun(opts)
		},
	}
	cmd.Flags().StringVarP(&opts.Encoding, "encoding", "e", "", "encoding: o200k_base (default), cl100k_base or chars4")
	cmd.Flags().StringVarP(&opts.Model, "model", "m", "", "count with the encoding of this model")
	cmdutil.AddJSONFlag(cmd.Flags(), &opts.JSON)
	cmd.Flags().StringVar(&opts.Example, "example", "", "FILE is a file of this built-in example workspace")
	cmd.Flags().BoolVar(&opts.Normalize, "normalize", false, "drop a byte-order mark and turn CRLF into LF before counting")
	return cmd
}

// Result is the --json output.
type Result struct {
	Encoding string `json:"encoding"`
	Tokens   int    `json:"tokens"`
	Bytes    int    `json:"bytes"`
	Model    string `json:"model,omitempty"`
	Fallback bool   `json:"fallback,omitempty"`
}

func tokensRun(opts *TokensOptions) error {
	var counter tokens.Counter
	res := Result{Encoding: tokens.Default}
	switch {
	case opts.Model != "":
		c, r := tokens.ForModel(opts.Model)
		counter, res.Encoding, res.Model, res.Fallback = c, r.Encoding, opts.Model, r.Fallback
	case opts.Encoding != "":
		c, err := tokens.Get(opts.Encoding)
		if err != nil {
			return cmdutil.FlagErrorf("--encoding: %v", err)
		}
		counter, res.Encoding = c, opts.Encoding
	default:
		counter, _ = tokens.Get(tokens.Default)
	}

	name, data, err := readInput(opts)
	if err != nil {
		return err
	}
	res.Bytes = len(data)

	var warnings []string
	text := string(data)
	if opts.Normalize {
		text, warnings = workspace.Normalize(data)
	} else if !utf8.Valid(data) {
		// The counter makes the same repair; this only says so.
		warnings = append(warnings, "invalid UTF-8 replaced with U+FFFD")
	}
	if res.Fallback {
		warnings = append(warnings, fmt.Sprintf("unknown model %q: counted with %s", opts.Model, res.Encoding))
	}
	for _, w := range warnings {
		fmt.Fprintf(opts.IO.ErrOut, "loom: warning: %s: %s\n", workspace.QuotePath(name), workspace.OneLine(w))
	}

	res.Tokens = counter.Count(text)
	if opts.JSON {
		return jsonout.WriteLine(opts.IO.Out, res) // one line: a count is a record
	}
	_, err = fmt.Fprintln(opts.IO.Out, strconv.Itoa(res.Tokens))
	return err
}

// maxInput bounds what tokens reads, so that /dev/zero or an endless pipe
// ends in an error rather than in exhausted memory.
const maxInput = 64 << 20

// readInput returns the input's name for messages and its bytes.
func readInput(opts *TokensOptions) (string, []byte, error) {
	if opts.Example != "" {
		data, err := shared.ExampleFile(opts.Example, opts.File)
		return opts.File, data, err
	}
	if opts.File == "" || opts.File == "-" {
		data, err := cmdutil.ReadFileLimit("-", maxInput, opts.IO.In)
		if err != nil {
			return "<stdin>", nil, err
		}
		return "<stdin>", data, nil
	}
	// An argument names any file, not one inside a workspace, so this reads
	// it directly. The *PathError already says "open FILE: …".
	data, err := cmdutil.ReadFileLimit(opts.File, maxInput, nil)
	if err != nil {
		return opts.File, nil, err
	}
	return opts.File, data, nil
}
