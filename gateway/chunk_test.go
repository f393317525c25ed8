package gateway

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"testing"
)

// slowContent is what the full decode reads as the chunk's text, and
// whether it would read tool calls (which the fast path must leave to it).
func slowContent(data []byte) (string, bool, bool) {
	var c chunk
	if json.Unmarshal(data, &c) != nil {
		return "", false, false
	}
	text, calls := "", false
	for _, ch := range c.Choices {
		calls = calls || len(ch.Delta.ToolCalls) > 0
		if ch.Index == 0 && ch.Delta.Content != nil {
			text += *ch.Delta.Content
		}
	}
	return text, true, calls
}

// Whenever the fast path reads a chunk, it reads what encoding/json reads:
// hand-written cases, then random mutations of them.
func TestFastContentAgreesWithJSON(t *testing.T) {
	cases := []string{
		`{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"hello"},"finish_reason":null}]}`,
		`{"id":"c","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`,
		`{"choices":[{"index":0,"delta":{"content":"esc \"q\" \\ \n \u00e9 \ud83d\ude00 \u2028"}}]}`,
		`{"choices":[{"index":0,"delta":{"content":null}}],"usage":{"prompt_tokens":1,"nested":[1,2,{"a":[true,false,null]}]}}`,
		`{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`,
		`{"choices":[]}`,
		`{"choices":[{"index":1,"delta":{"content":"second choice"}}]}`,
		`{"choices":[{"index":0,"delta":{"content":"a"}},{"index":1,"delta":{"content":"b"}}]}`,
		`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"x","function":{"name":"f","arguments":"{}"}}]}}]}`,
		`{"choices":[{"index":0,"delta":{"Content":"folded key"}}]}`,
		`{"Choices":[{"index":0,"delta":{"content":"folded"}}]}`,
		`{"choices":[{"delta":{"content":"no index"}}]}`,
		`{"choices":[{"index":0,"delta":{"content":"dup","content":"last"}}]}`,
		`{"choices":[{"index":0,"delta":{"content":"x"}}]} trailing`,
		`{"choices":[{"index":0.0,"delta":{"content":"float index"}}]}`,
		`{"choices":[{"index":0,"delta":{"content":"bad utf8 ` + "\xff" + `"}}]}`,
		`{"choices":[{"index":0,"delta":{"content":"ctl ` + "\x01" + `"}}]}`,
		` { "choices" : [ { "index" : 0 , "delta" : { "content" : "spaced" } } ] } `,
		`{"choices":[{"index":0,"delta":{"content":"x","reasoning_content":"thought"},"extra":{"k":[1e5,-2.5]}}]}`,
		`[1,2]`, `{}`, `{"choices":null}`, `{"choices":[{"index":0,"delta":null}]}`,
	}
	check := func(data string) {
		t.Helper()
		fast, ok := fastContent([]byte(data))
		slow, valid, calls := slowContent([]byte(data))
		if ok && (!valid || calls || string(fast) != slow) {
			t.Errorf("%q: fast read %q, encoding/json %q (valid %v, tool calls %v)", data, fast, slow, valid, calls)
		}
	}
	for _, c := range cases {
		check(c)
	}
	if _, ok := fastContent([]byte(cases[0])); !ok {
		t.Fatal("the common chunk is not read by the fast path")
	}
	rng := rand.New(rand.NewPCG(1, 2))
	alphabet := []byte(`{}[]":,\ 0a-.eEnulltrue` + "\x00\xff")
	for i := 0; i < 20000; i++ {
		b := []byte(cases[rng.IntN(len(cases))])
		for n := rng.IntN(3) + 1; n > 0; n-- {
			j := rng.IntN(len(b) + 1)
			switch rng.IntN(3) {
			case 0: // insert
				b = append(b[:j], append([]byte{alphabet[rng.IntN(len(alphabet))]}, b[j:]...)...)
			case 1: // delete
				if j < len(b) {
					b = append(b[:j], b[j+1:]...)
				}
			default: // replace
				if j < len(b) {
					b[j] = alphabet[rng.IntN(len(alphabet))]
				}
			}
		}
		check(string(b))
	}
}

func TestValidNumberAgreesWithJSON(t *testing.T) {
	for _, s := range []string{"0", "-0", "1", "-12", "10.5", "1e3", "1E+3", "1.5e-07", "01", "-", "", "1.", ".5", "1e", "1e+", "+1", "--1", "0x1", "1.2.3", "00", "-01", "123456789012345678901234567890"} {
		if got, want := validNumber([]byte(s)), json.Valid([]byte(s)); got != want {
			t.Errorf("%q: validNumber %v, json.Valid %v", s, got, want)
		}
	}
}

func TestHasControl(t *testing.T) {
	for n := 0; n < 20; n++ {
		for at := -1; at < n; at++ {
			for _, bad := range []byte{0x00, 0x01, 0x1f} {
				b := make([]byte, n)
				for i := range b {
					b[i] = byte('a' + i%26)
					if i%5 == 3 {
						b[i] = 0xe9 // a high byte next to the checked one
					}
					if i%7 == 2 {
						b[i] = 0x20
					}
				}
				if at >= 0 {
					b[at] = bad
				}
				if got := hasControl(b); got != (at >= 0) {
					t.Fatalf("%q: hasControl %v", b, got)
				}
			}
		}
	}
}

// FuzzSplitRequestAgrees: when splitRequest reads a body, its fields are
// what encoding/json reads (compared as compacted JSON). The messages
// list's elements are jsonscan.Elements' (its FuzzSplitAgrees).
func FuzzSplitRequestAgrees(f *testing.F) {
	for _, s := range []string{
		`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"x"}]}`,
		` { "messages" : [ {"role":"user"} , 1 , "s" , [2] ] , "a\u0062" : {"x":[1,2]} } `,
		`{"messages":[]}`, `{"messages":{}}`, `{"messages":null}`, `{}`, `[]`, `{"a":1,"a":2}`,
		"{\"k\xff\":1,\"messages\":[{}]}", `{"messages":[{"role":"user","content":"a\"b\\c"}],"temperature":0.2}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		fields, fast := splitRequest(body)
		if !fast {
			return
		}
		var want map[string]json.RawMessage
		if err := json.Unmarshal(body, &want); err != nil || want == nil {
			t.Fatalf("%q: split, but encoding/json says %v", body, err)
		}
		compact := func(r json.RawMessage) string {
			var b bytes.Buffer
			if err := json.Compact(&b, r); err != nil {
				t.Fatalf("%q: a field is not JSON: %q", body, r)
			}
			return b.String()
		}
		if len(fields) != len(want) {
			t.Fatalf("%q: %d fields, encoding/json %d", body, len(fields), len(want))
		}
		for k, v := range want {
			if got, ok := fields[k]; !ok || compact(got) != compact(v) {
				t.Fatalf("%q: field %q = %q, encoding/json %q", body, k, got, v)
			}
		}
	})
}
