package gateway_test

import (
	"fmt"
	"net/http"
	"sync"
	"testing"
)

// Many clients at once, streamed and not, on shared and separate sessions,
// saved after their handlers return. This once crashed the garbage
// collector (a strings.Builder copied into a goroutine kept a pointer to a
// dead stack frame); run it with and without -race.
func TestConcurrentRequests(t *testing.T) {
	e := setup(t, "")
	e.up.setReply(func(w http.ResponseWriter, body map[string]any) {
		if body["stream"] == true {
			writeStream(w, streamChunks("a", "b"), 0)
			return
		}
		writeCompletion(w, "ok")
	})
	var wg sync.WaitGroup
	for c := 0; c < 16; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				res := e.post(t, "/v1/chat/completions", map[string]any{"stream": i%2 == 0, "user": fmt.Sprint("u", c%3),
					"messages": []any{map[string]any{"role": "system", "content": "client"}, map[string]any{"role": "user", "content": "hi /greet"}}},
					"X-Loom-Session", fmt.Sprint("s", c%4))
				if body := readAll(t, res); res.StatusCode != 200 {
					t.Errorf("%d %s", res.StatusCode, body)
				}
			}
		}()
	}
	wg.Wait()
}
