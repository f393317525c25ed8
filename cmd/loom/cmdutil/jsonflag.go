package cmdutil

import (
	"fmt"

	"github.com/spf13/pflag"
)

// AddJSONFlag adds --json to fs, setting *dst.
func AddJSONFlag(fs *pflag.FlagSet, dst *bool) {
	fs.BoolVar(dst, "json", false, "print the result as JSON")
}

// AddJSONFormatAlias adds --json to a command that already has --format: it
// sets *format to "json", the same as --format json.
func AddJSONFormatAlias(fs *pflag.FlagSet, format *string) {
	fs.Var(formatAlias{format}, "json", "print the result as JSON (the same as --format json)")
	fs.Lookup("json").NoOptDefVal = "true"
}

type formatAlias struct{ format *string }

func (f formatAlias) String() string { return fmt.Sprint(f.format != nil && *f.format == "json") }
func (f formatAlias) Type() string   { return "bool" }
func (f formatAlias) IsBoolFlag() bool {
	return true
}

func (f formatAlias) Set(s string) error {
	switch s {
	case "true", "1":
		*f.format = "json"
	case "false", "0":
	default:
		return fmt.Errorf("--json takes no value")
	}
	return nil
}
