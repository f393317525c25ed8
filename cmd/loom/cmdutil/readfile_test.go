package cmdutil

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/loomctx/loom/config"
	"github.com/spf13/pflag"
)

func TestReadFileLimit(t *testing.T) {
	dir := t.TempDir()
	small := filepath.Join(dir, "small")
	os.WriteFile(small, []byte("hello"), 0o644)
	if data, err := ReadFileLimit(small, 5, nil); err != nil || string(data) != "hello" {
		t.Errorf("at the limit: %q, %v", data, err)
	}
	if _, err := ReadFileLimit(small, 4, nil); !errors.Is(err, ErrFileTooLarge) || !strings.HasPrefix(err.Error(), small+": ") {
		t.Errorf("over the limit: %v", err)
	}
	if _, err := ReadFileLimit("/dev/zero", 1<<10, nil); !errors.Is(err, ErrFileTooLarge) || !strings.Contains(err.Error(), "more than 1 KiB") {
		t.Errorf("/dev/zero: %v", err)
	}
	if _, err := ReadFileLimit(dir, 0, nil); err == nil || !strings.Contains(err.Error(), "is a folder") {
		t.Errorf("folder: %v", err)
	}
	if _, err := ReadFileLimit("-", 3, strings.NewReader("abcd")); !errors.Is(err, ErrFileTooLarge) || !strings.HasPrefix(err.Error(), "standard input: ") {
		t.Errorf("stdin: %v", err)
	}
	if _, err := ReadFileLimit(filepath.Join(dir, "missing"), 0, nil); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing: %v", err)
	}
}

// A FIFO nobody writes to must not hang the command.
func TestReadFileLimitFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skip("no FIFOs:", err)
	}
	done := make(chan error, 1)
	go func() { _, err := ReadFileLimit(fifo, 0, nil); done <- err }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("reading a FIFO without a writer hangs")
	}
}

func TestMemoryDBFlag(t *testing.T) {
	t.Setenv(config.EnvMemoryDB, "")
	fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
	AddMemoryDBFlag(fs)
	if err := fs.Parse([]string{"--memory-db", "rel/m.db"}); err != nil {
		t.Fatal(err)
	}
	want, _ := filepath.Abs("rel/m.db")
	if got, err := config.MemoryStoreLocation(t.TempDir(), nil); err != nil || got != want {
		t.Errorf("--memory-db: %q, %v; want %q", got, err, want)
	}
	if err := fs.Parse([]string{"--memory-db", " "}); err == nil {
		t.Error("an empty --memory-db is accepted")
	}
}

func TestJSONFormatAlias(t *testing.T) {
	for _, tt := range []struct {
		args    []string
		want    string
		wantErr bool
	}{
		{nil, "text", false},
		{[]string{"--json"}, "json", false},
		{[]string{"--format", "json", "--json"}, "json", false},
		{[]string{"--json", "--format", "json"}, "json", false},
		{[]string{"--json", "--format", "openai"}, "", true},
		{[]string{"--format", "openai", "--json"}, "", true},
		{[]string{"--format", "openai"}, "openai", false},
	} {
		fs := pflag.NewFlagSet("x", pflag.ContinueOnError)
		var format string
		fs.StringVar(&format, "format", "text", "")
		AddJSONFormatAlias(fs, &format)
		err := fs.Parse(tt.args)
		if (err != nil) != tt.wantErr || (!tt.wantErr && format != tt.want) {
			t.Errorf("%v: format %q, err %v", tt.args, format, err)
		}
	}
}
