package cmdutil

import (
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/loomctx/loom/config"
)

// AddMemoryDBFlag adds --memory-db, the operator's way to put the memory
// database anywhere, the workspace's outside included. Setting it sets
// $LOOM_MEMORY_DB for the process, so that every part of loom that
// resolves the store (config.MemoryStoreLocation) sees the same choice.
func AddMemoryDBFlag(fs *pflag.FlagSet) {
	fs.Var(memoryDBFlag{}, "memory-db", "memory database `file` (overrides loom.yaml's memory.db and $"+config.EnvMemoryDB+")")
}

type memoryDBFlag struct{}

func (memoryDBFlag) String() string { return os.Getenv(config.EnvMemoryDB) }
func (memoryDBFlag) Type() string   { return "file" }

func (memoryDBFlag) Set(s string) error {
	if strings.TrimSpace(s) == "" {
		return FlagErrorf("--memory-db needs a file name")
	}
	abs, err := filepath.Abs(s)
	if err != nil {
		return err
	}
	return os.Setenv(config.EnvMemoryDB, abs)
}
