package messages

import (
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// Class: FIFO. --media naming a named pipe is dropped at once, never waited
// on for a writer.
func TestMediaFIFONeverBlocks(t *testing.T) {
	p := filepath.Join(t.TempDir(), "pipe.png")
	if err := syscall.Mkfifo(p, 0o644); err != nil {
		t.Fatal(err)
	}
	done := make(chan []Dropped, 1)
	go func() {
		_, _, dropped := LoadImages([]string{p}, MediaLimits{})
		done <- dropped
	}()
	select {
	case dropped := <-done:
		if len(dropped) != 1 || dropped[0].Code != DropIrregular {
			t.Errorf("dropped = %+v, want one %s", dropped, DropIrregular)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("LoadImages blocked on a FIFO")
	}
}
