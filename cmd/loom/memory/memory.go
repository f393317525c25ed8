// Package memory implements `loom memory`: add, list, forget, import and
// export the structured memories of a workspace.
package memory

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/loomctx/loom/cmd/loom/cmdutil"
	"github.com/loomctx/loom/config"
	"github.com/loomctx/loom/memory"
	"github.com/loomctx/loom/workspace"
)

// Options are the inputs of every `loom memory` subcommand; each uses the
// fields it needs.
type Options struct {
	IO  *cmdutil.IOStreams
	Dir string

	// add
	Text       string
	Category   string
	User       string
	Chat       string
	Supersedes string

	// list
	All  bool
	JSON bool

	// forget
	ID string

	// import
	File string

	// Now stamps new memories; nil means time.Now. Tests set it.
	Now memory.Option
}

// NewCmdMemory returns the memory command with its subcommands. runF
// replaces each subcommand's run function in tests; it receives the
// subcommand's name and options.
func NewCmdMemory(io *cmdutil.IOStreams, runF func(string, *Options) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "memory",
		Short: "Add, list, forget, import and export a workspace's memories",
		Long: `Structured memories live in <workspace>/.loom/memory.db, or in the file
loom.yaml's memory.db names inside the workspace. Only the operator can put
them outside it: --memory-db FILE or LOOM_MEMORY_DB=FILE. Each has a category, content, a scope (a user, or the whole
workspace) and the chat it came from. Nothing is ever deleted: a memory that
is superseded or forgotten stays listable with --all.

Categories come from loom.yaml's memory.categories, in priority order; the
default is global_rule, then personal_fact.`,
		Args: cobra.NoArgs,
	}
	sub := func(name string, c *cobra.Command, opts *Options, run func(*Options) error) {
		c.Flags().StringVarP(&opts.Dir, "workspace", "w", ".", "workspace folder")
		c.RunE = func(c *cobra.Command, args []string) error {
			switch name {
			case "add":
				opts.Text = joinArgs(args)
			case "forget":
				opts.ID = args[0]
			case "import":
				opts.File = args[0]
			}
			if runF != nil {
				return runF(name, opts)
			}
			return run(opts)
		}
		cmd.AddCommand(c)
	}

	addOpts := &Options{IO: io}
	add := &cobra.Command{
		Use:   "add [flags] TEXT",
		Short: "Add a memory and print its id",
		Example: `  loom memory add "Respond in French"
  loom memory add --category personal_fact --user alex "The user is Alex"
  loom memory add --supersedes m_3f2a9c01d4e5 "Respond in German"`,
		Args: cobra.MinimumNArgs(1),
	}
	add.Flags().StringVar(&addOpts.Category, "category", "", "category (default: the first configured one)")
	add.Flags().StringVar(&addOpts.User, "user", "", "the user it belongs to (default: the whole workspace)")
	add.Flags().StringVar(&addOpts.Chat, "chat", "", "the chat it came from")
	add.Flags().StringVar(&addOpts.Supersedes, "supersedes", "", "id of an active memory this one replaces")
	sub("add", add, addOpts, addRun)

	listOpts := &Options{IO: io}
	list := &cobra.Command{
		Use:   "list",
		Short: "List memories, newest first",
		Long: `List the active memories of every scope, newest first. With --user, list that
user's memories and the workspace-wide ones: what a prompt for that user draws
from. --all adds superseded and forgotten memories.`,
		Args: cobra.NoArgs,
	}
	list.Flags().StringVar(&listOpts.User, "user", "", "only this user's and the workspace-wide memories")
	list.Flags().BoolVar(&listOpts.All, "all", false, "include superseded and forgotten memories")
	list.Flags().BoolVar(&listOpts.JSON, "json", false, "print a JSON array")
	sub("list", list, listOpts, listRun)

	forgetOpts := &Options{IO: io}
	sub("forget", &cobra.Command{
		Use:   "forget ID",
		Short: "Forget a memory (it stays listable with list --all)",
		Args:  cobra.ExactArgs(1),
	}, forgetOpts, forgetRun)

	importOpts := &Options{IO: io}
	sub("import", &cobra.Command{
		Use:   "import FILE.jsonl",
		Short: "Import memories from JSON Lines, all or nothing",
		Long: `Import memories from a JSON Lines file, one object a line:
  {"id","category","content","created_at","user","chat","superseded_by"}
Only id, category and content are required. Ids and times are kept. A bad line
is an error naming its line number, and then nothing from the file is imported.`,
		Args: cobra.ExactArgs(1),
	}, importOpts, importRun)

	exportOpts := &Options{IO: io}
	sub("export", &cobra.Command{
		Use:   "export",
		Short: "Write every memory as JSON Lines, oldest first",
		Args:  cobra.NoArgs,
	}, exportOpts, exportRun)
	cmd.AddCommand(newCmdConsolidate(io, nil))
	return cmd
}

func joinArgs(args []string) string {
	s := ""
	for i, a := range args {
		if i > 0 {
			s += " "
		}
		s += a
	}
	return s
}

// workspaceMemory is what the subcommands need from a workspace: its
// categories and where its database is.
type workspaceMemory struct {
	cats   []memory.Category
	dbPath string
}

// load reads loom.yaml for the memory settings. This is the seam where
// loom.yaml's memory section meets the memory package.
func load(dir string) (*workspaceMemory, error) {
	ws, err := workspace.Open(dir)
	if err != nil {
		return nil, err
	}
	cfg, err := config.Load(ws)
	if err != nil {
		return nil, err
	}
	dbPath, err := config.MemoryStoreLocation(ws.Root(), cfg)
	if err != nil {
		return nil, err
	}
	wm := &workspaceMemory{cats: memory.DefaultCategories, dbPath: dbPath}
	if len(cfg.Memory.Categories) > 0 {
		wm.cats = make([]memory.Category, len(cfg.Memory.Categories))
		for i, c := range cfg.Memory.Categories {
			wm.cats[i] = memory.Category{Name: c.Name, Label: c.Label}
		}
	}
	return wm, nil
}

// open opens the database, creating it unless ifExists; with ifExists and
// no database it returns nil.
func (wm *workspaceMemory) open(opts *Options, ifExists bool) (*memory.SQLite, error) {
	o := []memory.Option{memory.WithCategories(wm.cats)}
	if opts.Now != nil {
		o = append(o, opts.Now)
	}
	if ifExists {
		if _, err := os.Stat(wm.dbPath); errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
	} else if err := os.MkdirAll(filepath.Dir(wm.dbPath), 0o700); err != nil {
		return nil, err
	}
	return memory.OpenSQLite(wm.dbPath, o...)
}

// openStore loads the workspace's memory settings and opens its store. With
// ifExists, a workspace without a store gives a nil store and no error.
func openStore(opts *Options, ifExists bool) (*memory.SQLite, error) {
	wm, err := load(opts.Dir)
	if err != nil {
		return nil, err
	}
	return wm.open(opts, ifExists)
}
