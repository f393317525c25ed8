package gateway

import (
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
