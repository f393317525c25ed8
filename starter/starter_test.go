package starter

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"unicode/utf8"

	"github.com/loomctx/loom/workspace"
)

// wantFiles lists every starter file per preset; adding or removing a
// template must be a deliberate change to this list.
var wantFiles = map[string][]string{
	"assistant": {
		"AGENTS.md", "SOUL.md", "TOOLS.md", "USER.md", "loom.yaml",
		"memory/HISTORY.md", "memory/MEMORY.md", "skills/.keep",
	},
	"analyst": {
		"RULES.md", "agent/prompts/README.md", "agent/skills/example-skill.md",
		"databases/README.md", "loom.yaml",
	},
}

func listFiles(t *testing.T, fsys fs.FS) []string {
	t.Helper()
	var files []string
	err := fs.WalkDir(fsys, ".", func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			files = append(files, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(files)
	return files
}

func TestPresets(t *testing.T) {
	got := Presets()
	if want := []string{"analyst", "assistant"}; !slices.Equal(got, want) {
		t.Errorf("Presets() = %q, want %q", got, want)
	}
}

func TestFilesList(t *testing.T) {
	for preset, want := range wantFiles {
		fsys, err := Files(preset)
		if err != nil {
			t.Fatal(err)
		}
		want = slices.Sorted(slices.Values(want))
		if got := listFiles(t, fsys); !slices.Equal(got, want) {
			t.Errorf("Files(%q) = %q, want %q", preset, got, want)
		}
	}
}

func TestFilesUnknownPreset(t *testing.T) {
	_, err := Files("coder")
	if err == nil {
		t.Fatal("Files(coder) succeeded")
	}
	for _, s := range []string{`"coder"`, "analyst", "assistant"} {
		if !strings.Contains(err.Error(), s) {
			t.Errorf("error %q does not mention %s", err, s)
		}
	}
}

// TestTemplatesWellFormed checks what the prompt and editors rely on: UTF-8,
// a final newline, no trailing blanks, no CR.
func TestTemplatesWellFormed(t *testing.T) {
	for _, preset := range Presets() {
		fsys, _ := Files(preset)
		for _, rel := range listFiles(t, fsys) {
			b, err := fs.ReadFile(fsys, rel)
			if err != nil {
				t.Fatal(err)
			}
			name := preset + "/" + rel
			if len(b) == 0 {
				continue // HISTORY.md and .keep are empty on purpose
			}
			if !utf8.Valid(b) {
				t.Errorf("%s: invalid UTF-8", name)
			}
			if b[len(b)-1] != '\n' || strings.HasSuffix(string(b), "\n\n") {
				t.Errorf("%s: must end with exactly one newline", name)
			}
			for i, line := range strings.Split(string(b), "\n") {
				if strings.TrimRight(line, " \t\r") != line {
					t.Errorf("%s:%d: trailing whitespace", name, i+1)
				}
			}
		}
	}
}

func TestEmptyOnPurpose(t *testing.T) {
	fsys, _ := Files("assistant")
	for _, rel := range []string{"memory/HISTORY.md", "skills/.keep"} {
		b, err := fs.ReadFile(fsys, rel)
		if err != nil || len(b) != 0 {
			t.Errorf("%s: %d bytes, err %v; want an empty file", rel, len(b), err)
		}
	}
}

func TestLoomYAMLNamesPreset(t *testing.T) {
	for _, preset := range Presets() {
		fsys, _ := Files(preset)
		b, err := fs.ReadFile(fsys, "loom.yaml")
		if err != nil {
			t.Fatal(err)
		}
		var live []string
		for _, line := range strings.Split(string(b), "\n") {
			if line != "" && !strings.HasPrefix(line, "#") {
				live = append(live, line)
			}
		}
		if want := []string{"preset: " + preset}; !slices.Equal(live, want) {
			t.Errorf("%s/loom.yaml: uncommented lines %q, want %q", preset, live, want)
		}
	}
}

func TestIsUntouched(t *testing.T) {
	for _, preset := range Presets() {
		fsys, _ := Files(preset)
		for _, rel := range listFiles(t, fsys) {
			b, _ := fs.ReadFile(fsys, rel)
			text := string(b)
			if !IsUntouched(rel, text) {
				t.Errorf("%s/%s: own text not recognised", preset, rel)
			}
			if !IsUntouched(rel, text+"\n  \n") {
				t.Errorf("%s/%s: extra trailing whitespace counted as an edit", preset, rel)
			}
			if !IsUntouched(rel, strings.ReplaceAll(text, "\n", "\r\n")) {
				t.Errorf("%s/%s: CRLF counted as an edit", preset, rel)
			}
			if IsUntouched(rel, text+"- my own line\n") {
				t.Errorf("%s/%s: appended line not counted as an edit", preset, rel)
			}
			if len(text) > 10 {
				edited := strings.Replace(text, " ", "  ", 1)
				if IsUntouched(rel, edited) {
					t.Errorf("%s/%s: inner edit not counted as an edit", preset, rel)
				}
			}
		}
	}
}

func TestIsUntouchedPaths(t *testing.T) {
	fsys, _ := Files("assistant")
	soul, _ := fs.ReadFile(fsys, "SOUL.md")
	agents, _ := fs.ReadFile(fsys, "AGENTS.md")
	tests := []struct {
		rel, text string
		want      bool
	}{
		{"SOUL.md", string(soul), true},
		{"./SOUL.md", string(soul), true},
		{"AGENTS.md", string(soul), false}, // right text, wrong file
		{"soul.md", string(soul), false},   // paths are case-sensitive
		{"notes/SOUL.md", string(soul), false},
		{"AGENTS.md", string(agents), true},
		{"AGENTS.md", "", false},
		{"RULES.md", "", false},
		{"README.md", "anything", false},
	}
	for _, tt := range tests {
		if got := IsUntouched(tt.rel, tt.text); got != tt.want {
			t.Errorf("IsUntouched(%q, %.20q…) = %v, want %v", tt.rel, tt.text, got, tt.want)
		}
	}
}

func TestWriteFresh(t *testing.T) {
	for _, preset := range Presets() {
		dir := filepath.Join(t.TempDir(), "new", "ws")
		created, skipped, err := Write(dir, preset)
		if err != nil {
			t.Fatal(err)
		}
		want := slices.Sorted(slices.Values(wantFiles[preset]))
		if !slices.Equal(created, want) {
			t.Errorf("%s: created %q, want %q", preset, created, want)
		}
		if len(skipped) != 0 {
			t.Errorf("%s: skipped %q in an empty folder", preset, skipped)
		}
		fsys, _ := Files(preset)
		for _, rel := range want {
			wantBytes, _ := fs.ReadFile(fsys, rel)
			got, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != string(wantBytes) {
				t.Errorf("%s/%s: written bytes differ from the template", preset, rel)
			}
		}
		assertNoTempFiles(t, dir)
	}
}

func TestWriteNeverOverwrites(t *testing.T) {
	dir := t.TempDir()
	mine := "# My soul\n\nhand-written\n"
	if err := os.WriteFile(filepath.Join(dir, "SOUL.md"), []byte(mine), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "memory"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A dangling symlink is also "something there": following it would write
	// outside the workspace.
	outside := filepath.Join(t.TempDir(), "target")
	if err := os.Symlink(outside, filepath.Join(dir, "memory", "MEMORY.md")); err != nil {
		t.Fatal(err)
	}
	created, skipped, err := Write(dir, "assistant")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"SOUL.md", "memory/MEMORY.md"}; !slices.Equal(skipped, want) {
		t.Errorf("skipped = %q, want %q", skipped, want)
	}
	if slices.Contains(created, "SOUL.md") || len(created) != len(wantFiles["assistant"])-2 {
		t.Errorf("created = %q", created)
	}
	got, _ := os.ReadFile(filepath.Join(dir, "SOUL.md"))
	if string(got) != mine {
		t.Errorf("SOUL.md = %q, want it unchanged", got)
	}
	if _, err := os.Lstat(outside); !os.IsNotExist(err) {
		t.Errorf("wrote through a symlink to %s", outside)
	}

	// A second run creates nothing and skips everything.
	created, skipped, err = Write(dir, "assistant")
	if err != nil {
		t.Fatal(err)
	}
	if len(created) != 0 || !slices.Equal(skipped, slices.Sorted(slices.Values(wantFiles["assistant"]))) {
		t.Errorf("second run: created %q, skipped %q", created, skipped)
	}
	assertNoTempFiles(t, dir)
}

func TestWriteBlockedFolder(t *testing.T) {
	dir := t.TempDir()
	// A file where the preset needs a folder.
	if err := os.WriteFile(filepath.Join(dir, "memory"), []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, err := Write(dir, "assistant")
	if err == nil || !strings.Contains(err.Error(), "memory") {
		t.Errorf("err = %v, want an error naming memory", err)
	}
}

func TestWriteUnknownPreset(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ws")
	if _, _, err := Write(dir, "nope"); err == nil {
		t.Fatal("Write with an unknown preset succeeded")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("folder created for an unknown preset")
	}
}

func TestCreateNewRace(t *testing.T) {
	// Many writers racing for one name: exactly one wins and the file holds
	// its bytes whole.
	dir := t.TempDir()
	path := filepath.Join(dir, "AGENTS.md")
	ws, err := workspace.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	const n = 16
	results := make(chan bool, n)
	for i := range n {
		go func() {
			ok, err := ws.CreateFile("AGENTS.md", []byte(strings.Repeat(string(rune('a'+i)), 4096)), 0o644)
			if err != nil {
				t.Error(err)
			}
			results <- ok
		}()
	}
	wins := 0
	for range n {
		if <-results {
			wins++
		}
	}
	if wins != 1 {
		t.Errorf("%d writers created the file, want 1", wins)
	}
	b, _ := os.ReadFile(path)
	if len(b) != 4096 || strings.Count(string(b), string(b[0])) != 4096 {
		t.Errorf("file is mixed or short: %d bytes", len(b))
	}
	assertNoTempFiles(t, dir)
}

func assertNoTempFiles(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), ".tmp-") {
			t.Errorf("temporary file left behind: %s", p)
		}
		return nil
	})
}

// loom init lays memory/ down as private data (0700, files 0600) whatever
// the umask, and refuses to write through a symlinked folder.
func TestWritePrivateMemoryAndNoSymlinks(t *testing.T) {
	old := syscall.Umask(0o022)
	dir := t.TempDir()
	_, _, err := Write(dir, "assistant")
	syscall.Umask(old)
	if err != nil {
		t.Fatal(err)
	}
	for rel, want := range map[string]fs.FileMode{"memory": 0o700, "memory/MEMORY.md": 0o600, "memory/HISTORY.md": 0o600, "AGENTS.md": 0o644, "skills": 0o755} {
		st, err := os.Stat(filepath.Join(dir, filepath.FromSlash(rel)))
		if err != nil {
			t.Fatal(err)
		}
		if st.Mode().Perm() != want {
			t.Errorf("%s is %v, want %v", rel, st.Mode().Perm(), want)
		}
	}

	outside := t.TempDir()
	dir2 := t.TempDir()
	os.Symlink(outside, filepath.Join(dir2, "memory"))
	if _, _, err := Write(dir2, "assistant"); !errors.Is(err, workspace.ErrSymlink) {
		t.Errorf("Write through a symlinked memory/ = %v", err)
	}
	if ents, _ := os.ReadDir(outside); len(ents) != 0 {
		t.Errorf("wrote outside through the link: %v", ents)
	}
}
