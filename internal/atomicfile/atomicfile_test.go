package atomicfile

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

func TestWriteFileReplacesWhole(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "MEMORY.md")
	if err := WriteFile(path, []byte("first\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := WriteFile(path, []byte("second\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != "second\n" {
		t.Errorf("content = %q, want %q", got, "second\n")
	}
	st, _ := os.Stat(path)
	if st.Mode().Perm() != 0o600 {
		t.Errorf("perm = %v, want the existing file's 0600", st.Mode().Perm())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("folder holds %d entries, want only the file (no temp left behind)", len(entries))
	}
}

func TestWriteFileFailsCleanly(t *testing.T) {
	dir := t.TempDir()
	if err := WriteFile(filepath.Join(dir, "missing", "f"), []byte("x"), 0o644); err == nil {
		t.Fatal("write into a missing folder succeeded")
	}
	if err := WriteFile(dir, []byte("x"), 0o644); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("write over a folder: err = %v", err)
	}
}

// TestWriteFileReadersSeeWholeVersions rewrites a file while readers read
// it: every read must be one of the versions, never a mix or empty.
func TestWriteFileReadersSeeWholeVersions(t *testing.T) {
	path := filepath.Join(t.TempDir(), "f")
	versions := map[string]bool{}
	for i := range 20 {
		versions[strings.Repeat(fmt.Sprintf("v%02d ", i), 4000)] = true
	}
	first := strings.Repeat("v00 ", 4000)
	if err := WriteFile(path, []byte(first), 0o644); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 4 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				got, err := os.ReadFile(path)
				if err != nil {
					t.Error(err)
					return
				}
				if !versions[string(got)] {
					t.Errorf("read a torn file of %d bytes", len(got))
					return
				}
			}
		})
	}
	for i := range 20 {
		if err := WriteFile(path, []byte(strings.Repeat(fmt.Sprintf("v%02d ", i), 4000)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
}

func TestAppendConcurrent(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	const writers, each = 8, 1000
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				entry := fmt.Sprintf("[w%d #%04d] %s\n\n", w, i, strings.Repeat("x", 50+i%200))
				if err := Append(path, []byte(entry), 0o644); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	entries := bytes.Split(bytes.TrimSuffix(data, []byte("\n\n")), []byte("\n\n"))
	if len(entries) != writers*each {
		t.Fatalf("%d entries, want %d", len(entries), writers*each)
	}
	seen := map[string]bool{}
	for _, e := range entries {
		var w, i int
		if _, err := fmt.Sscanf(string(e), "[w%d #%04d]", &w, &i); err != nil {
			t.Fatalf("torn entry %q", e)
		}
		want := fmt.Sprintf("[w%d #%04d] %s", w, i, strings.Repeat("x", 50+i%200))
		if string(e) != want {
			t.Fatalf("entry %q is not whole", e)
		}
		seen[want] = true
	}
	if len(seen) != writers*each {
		t.Fatalf("%d distinct entries, want %d", len(seen), writers*each)
	}
}
