package cmdutil

import (
	"fmt"

	"github.com/spf13/pflag"
)

// AddJSONFlag adds --json to fs, setting *dst.
func AddJSONFlag(fs *pflag.FlagSet, dst *bool) {
	fs.BoolVar(dst, "json", false, "print the result as JSON")
}

// AddJSONFormatAlias adds --json to a command that already has a --format
// flag (add that first): --json sets it to "json", the same as --format
// json. --json beside --format with another value is an error, in either
// order.
func AddJSONFormatAlias(fs *pflag.FlagSet, format *string) {
	a := &formatAlias{format: format}
	if f := fs.Lookup("format"); f != nil {
		a.formatFlag = f
		f.Value = &formatGuard{Value: f.Value, alias: a}
	}
	fs.Var(a, "json", "print the result as JSON (the same as --format json)")
	fs.Lookup("json").NoOptDefVal = "true"
}

type formatAlias struct {
	format     *string
	formatFlag *pflag.Flag
	set        bool
}

func (f *formatAlias) String() string   { return fmt.Sprint(f.format != nil && *f.format == "json") }
func (f *formatAlias) Type() string     { return "bool" }
func (f *formatAlias) IsBoolFlag() bool { return true }

func (f *formatAlias) Set(s string) error {
	switch s {
	case "true", "1":
		if f.formatFlag != nil && f.formatFlag.Changed && *f.format != "json" {
			return fmt.Errorf("--json and --format %s ask for different outputs", *f.format)
		}
		*f.format, f.set = "json", true
	case "false", "0":
	default:
		return fmt.Errorf("--json takes no value")
	}
	return nil
}

// formatGuard refuses a --format other than json after --json.
type formatGuard struct {
	pflag.Value
	alias *formatAlias
}

func (g *formatGuard) Set(s string) error {
	if g.alias.set && s != "json" {
		return fmt.Errorf("--json and --format %s ask for different outputs", s)
	}
	return g.Value.Set(s)
}
