package starter

import (
	"io/fs"
	"os"
	"slices"
	"strings"

	"github.com/loomctx/loom/workspace"
)

// Write puts the starter files of preset into dir, creating dir and any
// folder below it as needed. It never replaces an existing file: such paths
// come back in skipped. created and skipped are slash-relative and sorted.
// On an error the files created so far are still reported.
//
// Everything below dir is written through the workspace door: no symlink
// is followed, and memory/ (the agent's private notes) is created 0700 with
// its files 0600. Each file is written to a synced temporary file and then
// linked to its final name, which fails if the name exists, so a file that
// appears meanwhile is kept, never replaced, and a reader never sees a
// half-written file.
func Write(dir, preset string) (created, skipped []string, err error) {
	fsys, err := Files(preset)
	if err != nil {
		return nil, nil, err
	}
	return WriteFS(dir, fsys)
}

// WriteFS is [Write] for any tree of files, such as a built-in example
// workspace: the same folders, permissions and never-overwrite rule.
func WriteFS(dir string, fsys fs.FS) (created, skipped []string, err error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, err
	}
	ws, err := workspace.Open(dir)
	if err != nil {
		return nil, nil, err
	}
	err = fs.WalkDir(fsys, ".", func(rel string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if rel == "." {
				return nil
			}
			return ws.MkdirAll(rel, dirPerm(rel))
		}
		data, err := fs.ReadFile(fsys, rel)
		if err != nil {
			return err
		}
		ok, err := ws.CreateFile(rel, data, filePerm(rel))
		if err != nil {
			return err
		}
		if ok {
			created = append(created, rel)
		} else {
			skipped = append(skipped, rel)
		}
		return nil
	})
	slices.Sort(created)
	slices.Sort(skipped)
	return created, skipped, err
}

// private reports whether rel is the agent's private data: memory/ and
// .loom/.
func private(rel string) bool {
	top, _, _ := strings.Cut(rel, "/")
	return top == "memory" || top == ".loom"
}

func dirPerm(rel string) fs.FileMode {
	if private(rel) {
		return 0o700
	}
	return 0o755
}

func filePerm(rel string) fs.FileMode {
	if private(rel) {
		return 0o600
	}
	return 0o644
}
