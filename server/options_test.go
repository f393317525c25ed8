package server_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/loomctx/loom/server"
)

// TestOptionsNameTheFirstLongField: with several options over the length
// cap, the error names the first in field order, every time.
func TestOptionsNameTheFirstLongField(t *testing.T) {
	long := strings.Repeat("x", 5000)
	for range 20 {
		q := server.RenderRequest{User: long, ChatID: long, Channel: long, Model: long}
		_, err := q.Options()
		var p *server.Problem
		if !errors.As(err, &p) || p.Field != "channel" {
			t.Fatalf("got %v, want a field error on channel", err)
		}
	}
}
