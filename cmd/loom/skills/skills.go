// Package skills implements `loom skills`: list, show and validate the
// skills of a workspace.
package skills

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/loomctx/loom/cmd/loom/cmdutil"
	"github.com/loomctx/loom/cmd/loom/shared"
	"github.com/loomctx/loom/config"
	"github.com/loomctx/loom/internal/jsonout"
	lskills "github.com/loomctx/loom/skills"
	"github.com/loomctx/loom/workspace"
)

// Options are the inputs of `loom skills` and its subcommands.
type Options struct {
	IO   *cmdutil.IOStreams
	Dir  string
	JSON bool
	Name string
	// Loader replaces the options built from loom.yaml, for tests.
	Loader func(ws *workspace.Workspace, o lskills.Options) *lskills.Loader
}

// NewCmdSkills returns the skills command with its list, show and validate
// subcommands. runF replaces each subcommand's run function in tests; it
// receives the subcommand's name and options.
func NewCmdSkills(io *cmdutil.IOStreams, runF func(string, *Options) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "skills",
		Short: "List, show and check a workspace's skills",
		Long: `Skills are found in skills/<name>/SKILL.md and agent/skills/<name>.md of the
workspace, in the extra folders loom.yaml names under skills.paths, and among
loom's built-in skills, in that order of precedence.`,
		Args: cobra.NoArgs,
	}
	sub := func(name, use, short, example string, args cobra.PositionalArgs, run func(*Options) error, bind func(*cobra.Command, *Options)) {
		opts := &Options{IO: io}
		c := &cobra.Command{
			Use:     use,
			Short:   short,
			Example: example,
			Args:    args,
			RunE: func(c *cobra.Command, a []string) error {
				if len(a) > 0 {
					opts.Name = a[0]
				}
				if runF != nil {
					return runF(name, opts)
				}
				return run(opts)
			},
		}
		c.Flags().StringVarP(&opts.Dir, "workspace", "w", ".", "workspace folder")
		shared.AddExampleFlag(c, &opts.Dir, shared.ExampleRead)
		if bind != nil {
			bind(c, opts)
		}
		cmd.AddCommand(c)
	}
	sub("list", "list", "List every skill: name, source, status, availability and location",
		"  loom skills list -w ./agent --json\n  loom skills list --example assistant", cobra.NoArgs, ListRun,
		func(c *cobra.Command, o *Options) { cmdutil.AddJSONFlag(c.Flags(), &o.JSON) })
	sub("show", "show NAME", "Print a skill's body, frontmatter stripped",
		"  loom skills show -w ./agent weather-brief\n  loom skills show --example assistant todoist", cobra.ExactArgs(1), ShowRun, nil)
	sub("validate", "validate", "Check every skill; exit 1 when any has an error",
		"  loom skills validate -w ./agent\n  loom skills validate --example assistant", cobra.NoArgs, ValidateRun,
		func(c *cobra.Command, o *Options) { cmdutil.AddJSONFlag(c.Flags(), &o.JSON) })
	return cmd
}

func load(opts *Options) (*lskills.Set, error) {
	ws, err := workspace.Open(opts.Dir)
	if err != nil {
		return nil, err
	}
	cfg, err := config.Load(ws)
	if err != nil {
		return nil, err
	}
	o, _ := lskills.FromConfig(cfg)
	newLoader := lskills.New
	if opts.Loader != nil {
		newLoader = opts.Loader
	}
	return newLoader(ws, o).Load(), nil
}

// ListEntry is one skill in `loom skills list --json`.
type ListEntry struct {
	Name        string                 `json:"name"`
	Source      lskills.Source         `json:"source"`
	Status      lskills.Status         `json:"status"`
	Available   bool                   `json:"available"`
	Missing     []string               `json:"missing"`
	Always      bool                   `json:"always"`
	Location    string                 `json:"location"`
	Path        string                 `json:"path"`
	Description string                 `json:"description"`
	ShadowedBy  string                 `json:"shadowed_by,omitempty"`
	Diagnostics []workspace.Diagnostic `json:"diagnostics"`
}

// ListRun prints every skill, shadowed and broken ones included.
func ListRun(opts *Options) error {
	set, err := load(opts)
	if err != nil {
		return err
	}
	if opts.JSON {
		out := make([]ListEntry, 0, len(set.Skills))
		for _, sk := range set.Skills {
			out = append(out, ListEntry{
				Name: sk.Name, Source: sk.Source, Status: sk.Status, Available: sk.Available,
				Missing: nonNil(sk.Missing), Always: sk.Always(), Location: sk.Location, Path: sk.Path,
				Description: sk.Description(), ShadowedBy: sk.ShadowedBy,
				Diagnostics: nonNil(sk.Diagnostics),
			})
		}
		return jsonout.Write(opts.IO.Out, out)
	}
	tw := tabwriter.NewWriter(opts.IO.Out, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tSOURCE\tSTATUS\tAVAILABLE\tALWAYS\tLOCATION\tMISSING")
	for _, sk := range set.Skills {
		avail := "yes"
		if !sk.Available {
			avail = "no"
		}
		if sk.Status == lskills.StatusBroken {
			avail = "-"
		}
		always := "-"
		if sk.Always() {
			always = "yes"
		}
		missing := sk.MissingText()
		if missing == "" {
			missing = "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", sk.Name, sk.Source, sk.Status, avail, always, sk.Location, missing)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	cmdutil.PrintDiagnostics(opts.IO.ErrOut, folderDiags(set))
	return nil
}

// folderDiags are the diagnostics that belong to no skill (a refused
// folder, a bad skills path); a listing shows each skill's own in its row.
func folderDiags(set *lskills.Set) []workspace.Diagnostic {
	n := 0
	for _, sk := range set.Skills {
		n += len(sk.Diagnostics)
	}
	return set.Diagnostics[:len(set.Diagnostics)-n]
}

// ShowRun prints the body of the skill opts.Name.
func ShowRun(opts *Options) error {
	set, err := load(opts)
	if err != nil {
		return err
	}
	sk, ok := set.Get(opts.Name)
	if !ok {
		var names []string
		for _, s := range set.Usable() {
			names = append(names, s.Name)
		}
		return fmt.Errorf("no skill named %q; there are: %s", opts.Name, strings.Join(names, ", "))
	}
	if sk.Status == lskills.StatusBroken {
		cmdutil.PrintDiagnostics(opts.IO.ErrOut, sk.Diagnostics)
		return &cmdutil.SilentError{Code: 1}
	}
	fmt.Fprintln(opts.IO.Out, sk.Body)
	return nil
}

// ValidateRun prints every diagnostic as "file:line: severity: message" and
// fails when any is an error.
// ValidateResult is what skills validate --json prints.
type ValidateResult struct {
	Skills      int                    `json:"skills"`
	Errors      int                    `json:"errors"`
	Warnings    int                    `json:"warnings"`
	Diagnostics []workspace.Diagnostic `json:"diagnostics"`
}

func ValidateRun(opts *Options) error {
	set, err := load(opts)
	if err != nil {
		return err
	}
	errs, warns := 0, 0
	for _, d := range set.Diagnostics {
		if !opts.JSON {
			fmt.Fprintln(opts.IO.Out, d.String())
		}
		if d.Severity == workspace.Error {
			errs++
		} else {
			warns++
		}
	}
	if opts.JSON {
		if err := jsonout.Write(opts.IO.Out, ValidateResult{
			Skills: len(set.Skills), Errors: errs, Warnings: warns, Diagnostics: nonNil(set.Diagnostics),
		}); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(opts.IO.ErrOut, "%s, %s, %s\n", plural(len(set.Skills), "skill"), plural(errs, "error"), plural(warns, "warning"))
	}
	if errs > 0 {
		return &cmdutil.SilentError{Code: 1}
	}
	return nil
}

func nonNil[T any](xs []T) []T {
	if xs == nil {
		return []T{}
	}
	return xs
}

// plural writes "1 skill" or "3 skills".
func plural(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return fmt.Sprintf("%d %ss", n, word)
}
