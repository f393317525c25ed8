// Package memory implements `loom memory`: add, list, forget, import and
// export the structured memories of a workspace.
package memory

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/loomctx/loom/cmd/loom/cmdutil"
	"github.com/loomctx/loom/cmd/loom/shared"
	"github.com/loomctx/loom/config"
	"github.com/loomctx/loom/memory"
	"github.com/loomctx/loom/memory/pgstore"
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

	// search: the query is Text
	Limit int

	// forget
	ID string

	// import
	File string

	// export: where to write the memory files kept in PostgreSQL
	FilesDir string

	// Store is "sqlite" (the default) or "postgres"; DSNEnv names the
	// variable holding the PostgreSQL DSN. Both are the operator's
	// choice (flags or LOOM_MEMORY_STORE), never loom.yaml's alone.
	Store  string
	DSNEnv string

	// Now stamps new memories; nil means time.Now. Tests set it.
	Now memory.Option
}

// NewCmdMemory returns the memory command with its subcommands. runF
// replaces each subcommand's run function in tests; it receives the
// subcommand's name and options.
func NewCmdMemory(io *cmdutil.IOStreams, runF func(string, *Options) error) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "memory",
		Short: "Add, list, search, forget, import and export a workspace's memories",
		Long: `Structured memories live in <workspace>/.loom/memory.db, or in the file
loom.yaml's memory.db names inside the workspace. Only the operator can put
them outside it: --memory-db FILE or LOOM_MEMORY_DB=FILE. Each has a category, content, a scope (a user, or the whole
workspace) and the chat it came from. Nothing is ever deleted: a memory that
is superseded or forgotten stays listable with --all.

Categories come from loom.yaml's memory.categories, in priority order; the
default is global_rule, then personal_fact.

Scope: a memory with no user is workspace-wide and enters every user's
prompt; one with --user U is U's alone. A memory may supersede only a memory
of its own scope, so replacing a workspace-wide rule takes an add with no
--user; automatic extraction for a user never replaces a workspace-wide or
another user's memory.

With --store postgres (or LOOM_MEMORY_STORE=postgres) the memories live in
PostgreSQL, shared by every replica: the DSN is read from the variable
--dsn-env names (LOOM_PG_DSN by default) and never printed, and the workspace
is keyed by its absolute path unless LOOM_PG_WORKSPACE names it (for a
workspace that loom serve --root serves, name it <prefix>/<folder name>, the
key the server uses).`,
		Args: cobra.NoArgs,
	}
	sub := func(name string, c *cobra.Command, opts *Options, run func(*Options) error) {
		c.Flags().StringVarP(&opts.Dir, "workspace", "w", ".", "workspace folder")
		c.Flags().StringVar(&opts.Store, "store", "", "sqlite or postgres (default: $LOOM_MEMORY_STORE, else sqlite)")
		c.Flags().StringVar(&opts.DSNEnv, "dsn-env", "LOOM_PG_DSN", "environment variable holding the PostgreSQL DSN (with --store postgres)")
		c.RunE = func(c *cobra.Command, args []string) error {
			switch name {
			case "add", "search":
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
		use := shared.ExampleRead
		if name == "add" || name == "forget" || name == "import" {
			use = shared.ExampleRefused
		}
		shared.AddExampleFlag(c, &opts.Dir, use)
		cmd.AddCommand(c)
	}

	addOpts := &Options{IO: io}
	add := &cobra.Command{
		Use:   "add [flags] TEXT",
		Short: "Add a memory and print its id",
		Example: `  loom memory add "Respond in French"
  loom memory add --category personal_fact --user alex "The user is Alex"
  loom memory add --supersedes m_3f2a9c01d4e5 "Respond in German"
  loom init --example assistant agent && loom memory add -w agent "Mira prefers the 08:00 ferry"`,
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
		Example: `  loom memory list -w ./agent --user ana
  loom memory list --example assistant --json`,
		Args: cobra.NoArgs,
	}
	list.Flags().StringVar(&listOpts.User, "user", "", "only this user's and the workspace-wide memories")
	list.Flags().BoolVar(&listOpts.All, "all", false, "include superseded and forgotten memories")
	cmdutil.AddJSONFlag(list.Flags(), &listOpts.JSON)
	sub("list", list, listOpts, listRun)

	searchOpts := &Options{IO: io}
	sub("search", newCmdSearch(searchOpts), searchOpts, searchRun)

	forgetOpts := &Options{IO: io}
	sub("forget", &cobra.Command{
		Use:     "forget ID",
		Short:   "Forget a memory (it stays listable with list --all)",
		Example: `  loom memory forget -w ./agent m_3f2a9c01d4e5`,
		Args:    cobra.ExactArgs(1),
	}, forgetOpts, forgetRun)

	importOpts := &Options{IO: io}
	sub("import", &cobra.Command{
		Use:   "import FILE.jsonl",
		Short: "Import memories from JSON Lines, all or nothing",
		Long: `Import memories from a JSON Lines file, one object a line:
  {"id","category","content","created_at","user","chat","superseded_by"}
Only id, category and content are required. Ids and times are kept. A bad line
is an error naming its line number, and then nothing from the file is imported.
The file is read a line at a time (a line is at most 4 MiB, the file has no
size limit); "-" reads standard input.`,
		Example: `  loom memory import -w ./agent memories.jsonl
  loom memory export -w old | loom memory import -w new -`,
		Args: cobra.ExactArgs(1),
	}, importOpts, importRun)

	exportOpts := &Options{IO: io}
	export := &cobra.Command{
		Use:   "export",
		Short: "Write every memory as JSON Lines, oldest first",
		Long: `Write every memory as JSON Lines, oldest first, to standard output.

With --store postgres, --files DIR also writes the memory files kept in the
database: DIR/MEMORY.md and DIR/HISTORY.md for the workspace, and
DIR/users/<user>/ for each user's own.`,
		Example: `  loom memory export -w ./agent > memories.jsonl
  loom memory export --example assistant`,
		Args: cobra.NoArgs,
	}
	export.Flags().StringVar(&exportOpts.FilesDir, "files", "", "with --store postgres: also write MEMORY.md and HISTORY.md into this folder")
	sub("export", export, exportOpts, exportRun)
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
	ws     *workspace.Workspace
	root   string
	cats   []memory.Category
	dbPath string
	// store and dsnEnv are loom.yaml's memory.store and memory.dsn_env.
	store, dsnEnv string
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
	return &workspaceMemory{ws: ws, root: ws.Root(), cats: memory.CategoriesOf(cfg), dbPath: dbPath,
		store: cfg.Memory.Store, dsnEnv: cfg.Memory.DSNEnv}, nil
}

// open opens the store, creating a SQLite database unless ifExists; with
// ifExists and no SQLite database it returns nil. The returned store's
// Close also closes what it opened.
func (wm *workspaceMemory) open(opts *Options, ifExists bool) (memory.Store, error) {
	switch storeKind(opts, wm) {
	case "sqlite":
	case "postgres":
		db, err := openPG(opts, wm)
		if err != nil {
			return nil, err
		}
		return pgMemory{db.Memory(pgstore.WorkspaceKey(wm.root), pgstore.WithCategories(wm.cats)), db}, nil
	default:
		return nil, cmdutil.FlagErrorf("--store %q: use sqlite or postgres", opts.Store)
	}
	o := []memory.Option{memory.WithCategories(wm.cats)}
	if opts.Now != nil {
		o = append(o, opts.Now)
	}
	// Inside the workspace the folders are made and the path checked
	// through the door; outside it (--memory-db or LOOM_MEMORY_DB) the
	// operator chose it.
	s, err := memory.OpenIn(wm.ws, wm.dbPath, !ifExists, o...)
	if s == nil || err != nil {
		// A nil *SQLite must not become a non-nil memory.Store.
		return nil, err
	}
	return s, nil
}

// storeKind is --store, else $LOOM_MEMORY_STORE, else loom.yaml's
// memory.store (wm may be nil), else sqlite.
func storeKind(opts *Options, wm *workspaceMemory) string {
	if opts.Store != "" {
		return opts.Store
	}
	if v := os.Getenv("LOOM_MEMORY_STORE"); v != "" {
		return v
	}
	if wm != nil && wm.store != "" {
		return wm.store
	}
	return "sqlite"
}

// openPG connects with the DSN from the operator's variable: --dsn-env,
// else loom.yaml's memory.dsn_env when the flag is left at its default.
func openPG(opts *Options, wm *workspaceMemory) (*pgstore.DB, error) {
	name := opts.DSNEnv
	if (name == "" || name == config.DefaultDSNEnv) && wm != nil && wm.dsnEnv != "" {
		name = wm.dsnEnv
	}
	if name == "" {
		name = config.DefaultDSNEnv
	}
	dsn := os.Getenv(name)
	if dsn == "" {
		return nil, fmt.Errorf("--store postgres: $%s is empty; set it to the PostgreSQL DSN", name)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return pgstore.Open(ctx, dsn, pgstore.WithoutListen(), pgstore.WithMaxConns(4))
}

// pgMemory closes its DB with the store.
type pgMemory struct {
	*pgstore.Memories
	db *pgstore.DB
}

func (p pgMemory) Close() error {
	p.Memories.Close()
	return p.db.Close()
}

// openStore loads the workspace's memory settings and opens its store. With
// ifExists, a workspace without a store gives a nil store and no error.
func openStore(opts *Options, ifExists bool) (memory.Store, error) {
	wm, err := load(opts.Dir)
	if err != nil {
		return nil, err
	}
	return wm.open(opts, ifExists)
}
