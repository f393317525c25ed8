package llm_test

import (
	"context"
	"errors"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loomctx/loom/llm"
	"github.com/loomctx/loom/llm/llmtest"
	"github.com/loomctx/loom/messages"
)

var hi = llm.Request{Messages: []messages.Message{{Role: messages.RoleUser, Content: messages.TextContent("hi")}}}

// peakHeap runs f while sampling the live heap, and returns how far the
// heap rose above where it started, and f's error.
func peakHeap(f func() error) (uint64, error) {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	base := ms.HeapAlloc
	var peak atomic.Uint64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		var m runtime.MemStats
		for {
			runtime.ReadMemStats(&m)
			if m.HeapAlloc > base && m.HeapAlloc-base > peak.Load() {
				peak.Store(m.HeapAlloc - base)
			}
			select {
			case <-stop:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	err := f()
	close(stop)
	wg.Wait()
	return peak.Load(), err
}

// A model that never stops, or sends 100 MB, is cut with ErrReplyTooLarge
// at the configured bound; what arrived before comes back with the error,
// memory stays within a small multiple of the bound, and nothing is
// retried.
func TestReplyTooLarge(t *testing.T) {
	const limit = 64 << 10
	for _, format := range []string{llmtest.OpenAI, llmtest.Anthropic} {
		for _, c := range []struct {
			name   string
			rep    llmtest.Reply
			stream bool
			text   bool // text reached the caller before the cut
		}{
			{"endless text stream", llmtest.Reply{Endless: "text"}, true, true},
			{"endless empty stream", llmtest.Reply{Text: "start ", Endless: "empty"}, true, true},
			{"100 MB event", llmtest.Reply{Flood: 100 << 20}, true, false},
			{"100 MB body", llmtest.Reply{Flood: 100 << 20}, false, false},
		} {
			t.Run(format+"/"+c.name, func(t *testing.T) {
				s := llmtest.New(t, format)
				s.Push(c.rep, llmtest.Reply{Text: "a retry that must not happen"})
				cfg := s.Config()
				cfg.MaxReplyBytes = limit
				client, err := llm.New(cfg, llmtest.Options(nil)...)
				if err != nil {
					t.Fatal(err)
				}
				var got strings.Builder
				var res llm.Response
				peak, err := peakHeap(func() error {
					var err error
					if c.stream {
						res, err = client.Stream(context.Background(), hi, func(d string) { got.WriteString(d) })
					} else {
						res, err = client.Complete(context.Background(), hi)
					}
					return err
				})
				if !errors.Is(err, llm.ErrReplyTooLarge) {
					t.Fatalf("err = %v, want ErrReplyTooLarge", err)
				}
				if !strings.Contains(err.Error(), "65536 bytes") || !strings.Contains(err.Error(), llm.EnvMaxReplyBytes) {
					t.Errorf("message does not say the bound and how to raise it: %v", err)
				}
				if int64(len(res.Content)) > limit || got.Len() > limit {
					t.Errorf("kept %d bytes, over the %d bound", len(res.Content), limit)
				}
				if c.text && (got.Len() == 0 || res.Content != got.String()) {
					t.Errorf("partial text lost: delivered %d, returned %d", got.Len(), len(res.Content))
				}
				if n := len(s.Requests()); n != 1 {
					t.Errorf("%d requests: a reply too large was retried", n)
				}
				// The bound on the stream's framing is 64x the reply's,
				// plus 1 MiB; the heap must not grow with what was sent.
				t.Logf("peak heap %d KiB, server sent %d KiB", peak>>10, s.Sent()>>10)
				if peak > 16<<20 {
					t.Errorf("heap rose %d MiB reading the reply", peak>>20)
				}
				if sent := s.Sent(); c.rep.Flood > 0 && sent >= c.rep.Flood/2 {
					t.Errorf("server wrote %d MiB of %d: the client kept reading", sent>>20, c.rep.Flood>>20)
				}
			})
		}
	}
}

// The default bound admits a large but sane reply; one byte over a small
// bound is refused.
func TestReplyBound(t *testing.T) {
	s := llmtest.New(t, llmtest.OpenAI)
	// 500 KB in 1,000 deltas of 500 bytes; no usage, so the fake does not
	// tokenize it.
	long := strings.Repeat(strings.Repeat("abcd", 125)+" ", 1000)[:500_000]
	s.Push(llmtest.Reply{Text: long, NoUsage: true}, llmtest.Reply{Text: strings.Repeat("x", 101)}, llmtest.Reply{Text: strings.Repeat("x", 100)})
	c := s.Client(t, nil)
	if res, err := c.Stream(context.Background(), hi, nil); err != nil || res.Content != long {
		t.Fatalf("500 KB reply under the default bound: %v", err)
	}
	cfg := s.Config()
	cfg.MaxReplyBytes = 100
	small, _ := llm.New(cfg, llmtest.Options(nil)...)
	if _, err := small.Complete(context.Background(), hi); !errors.Is(err, llm.ErrReplyTooLarge) {
		t.Errorf("101 bytes over a 100-byte bound: %v", err)
	}
	if _, err := small.Complete(context.Background(), hi); err != nil {
		t.Errorf("100 bytes at a 100-byte bound: %v", err)
	}
}
