package server

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
)

// FuzzMessagesRequestDecodesAlike: decodeMessagesRequest gives what
// DecodeJSON gives for every body: the same request, or the same error.
func FuzzMessagesRequestDecodesAlike(f *testing.F) {
	for _, s := range []string{
		`{"message":"hi","history":[{"role":"user","content":"a"},{"role":"assistant","content":"b"}],"channel":"slack"}`,
		` { "history" : [ 1 , "x" , {"a":[]} ] , "format" : "json" } `,
		`{"history":[]}`, `{"history":null}`, `{"history":{}}`, `{"History":[{}]}`, `{"history":[1],"history":[2]}`,
		`{"histor\u0079":[{"role":"user"}]}`, `{"history":[{}],"role":5}`, `{"history":[{}],"bogus":1}`,
		`{"history":[{}]} {}`, `{"history":[{}]`, ``, `[]`, `null`, `{"message":"x"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req := func() *MessagesRequest { return &MessagesRequest{} }
		a, b := req(), req()
		ra := httptest.NewRequest("POST", "/", bytes.NewReader(body))
		ra.Header.Set("Content-Type", "application/json")
		rb := httptest.NewRequest("POST", "/", bytes.NewReader(body))
		rb.Header.Set("Content-Type", "application/json")
		errA, errB := DecodeJSON(ra, a), decodeMessagesRequest(rb, b)
		if (errA == nil) != (errB == nil) || errA != nil && errA.Error() != errB.Error() {
			t.Fatalf("%q: DecodeJSON %v, decodeMessagesRequest %v", body, errA, errB)
		}
		if errA != nil {
			return
		}
		// The fast way keeps the history array undecoded: compare the
		// histories decoded, then the rest.
		histA, errA := a.decodeHistory()
		histB, errB := b.decodeHistory()
		if !sameProblem(errA, errB) || !reflect.DeepEqual(histA, histB) {
			t.Fatalf("%q: history\nDecodeJSON %+v, %v\nfast       %+v, %v", body, histA, errA, histB, errB)
		}
		a.History, b.History, b.history, b.historyLen = nil, nil, nil, 0
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("%q:\nDecodeJSON %+v\nfast       %+v", body, a, b)
		}
	})
}

// The fast way is taken for a plain body; the test above would pass too if
// it never were.
func TestCutHistoryTakesPlainBodies(t *testing.T) {
	rest, hist, n, ok := cutHistory([]byte(`{"message":"hi", "history":[{"role":"user","content":"a"}, {"role":"assistant"}],"channel":"slack"}`))
	if !ok || string(rest) != `{"message":"hi","channel":"slack"}` || n != 2 || string(hist) != `[{"role":"user","content":"a"}, {"role":"assistant"}]` {
		t.Errorf("cutHistory = %s, %q, %d, %v", rest, hist, n, ok)
	}
}

// FuzzRenderRequestDecodesAlike: decodeRenderRequest gives what DecodeJSON
// gives, the first time a body comes and the next (from its memory), and
// what it hands out is not shared with what it keeps.
func FuzzRenderRequestDecodesAlike(f *testing.F) {
	for _, s := range []string{`{"channel":"slack","user":"u1"}`, `{"tools":[]}`, `{"tools":["a","b"],"fork":{"title":"t"}}`,
		`{}`, `{"bogus":1}`, `{"budget":"x"}`, `[]`, `{"channel":"a"} {}`, `{"channel":`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		newReq := func() *http.Request {
			r := httptest.NewRequest("POST", "/", bytes.NewReader(body))
			r.Header.Set("Content-Type", "application/json")
			return r
		}
		var want RenderRequest
		errWant := decodeOptional(newReq(), &want)
		for pass := 0; pass < 2; pass++ {
			var got RenderRequest
			err := decodeRenderRequest(newReq(), &got)
			if (err == nil) != (errWant == nil) || err != nil && err.Error() != errWant.Error() {
				t.Fatalf("%q pass %d: decodeOptional %v, decodeRenderRequest %v", body, pass, errWant, err)
			}
			if err == nil && !reflect.DeepEqual(got, want) {
				t.Fatalf("%q pass %d:\nwant %+v\ngot  %+v", body, pass, want, got)
			}
			if len(got.Tools) > 0 {
				got.Tools[0] = "changed"
			}
			if got.Fork != nil {
				got.Fork.Title = "changed"
			}
		}
	})
}

// decodeBody (a large body checked on its skeleton, then decoded in place)
// gives what decodeFrom, the plain way, gives: the same values and the
// same problem, for good bodies and bad ones.
func TestDecodeBodyAgrees(t *testing.T) {
	long := strings.Repeat("ab c", 20_000) // 80,000 bytes: over minSkeletonBody
	esc := strings.Repeat(`x\"\n\u00e9\\`, 10_000)
	pad := strings.Repeat(" \n\t", 30_000)
	bodies := []string{
		`{"message":"` + long + `"}`,
		`{"message":"` + esc + `","user":"u","stream":true}`,
		pad + `{"message":"` + long + `"}` + pad,
		`{"Message":"` + long + `"}`,                          // another case: encoding/json takes it
		`{"message":"a","message":"` + long + `"}`,            // repeated: the last wins
		`{"message":"` + long + `","nope":"` + long + `"}`,    // unknown field
		`{"message":"` + long + `","stream":"` + long + `"}`,  // a string for a bool
		`{"message":"` + long + `","stream":1}`,               // a number for a bool
		`{"message":"` + long + `"}{}`,                        // two values
		`{"message":"` + long + `"`,                           // cut short
		`["` + long + `"]`,                                    // not an object
		`"` + long + `"`,                                      // a string
		`{"message":` + strings.Repeat("1", 70_000) + `}`,     // a number for a string
		`{"message":"` + long + `","channel":"` + long + `"}`, // two long fields
		`{"message":"` + long + "\x01" + `"}`,                 // a control byte in a string
		`{"message":"` + long + `","user":"` + "\xff" + `x"}`, // not UTF-8: replaced alike
	}
	for i, b := range bodies {
		var got, want TurnRequest
		gotErr := decodeBody([]byte(b), &got)
		wantErr := decodeFrom(bytes.NewReader([]byte(b)), &want)
		if !reflect.DeepEqual(got, want) || !sameProblem(gotErr, wantErr) {
			t.Errorf("body %d: decodeBody gave %+.60v, %v; decodeFrom %+.60v, %v", i, got, gotErr, want, wantErr)
		}
	}
	// Types with nested values: a render request's tools, a message list.
	for i, b := range []string{
		`{"tools":["` + long + `","b"],"budget":100,"fork":{"base_chat_id":"c"}}`,
		`{"tools":"` + long + `"}`,
		`{"budget":"` + long + `"}`,
		`{"message":"m","history":[{"role":"user","content":"` + long + `"}],"budget":5,"user":"` + long + `"}`,
	} {
		var got, want MessagesRequest
		gotErr := decodeBody([]byte(b), &got)
		wantErr := decodeFrom(bytes.NewReader([]byte(b)), &want)
		if !reflect.DeepEqual(got, want) || !sameProblem(gotErr, wantErr) {
			t.Errorf("messages body %d: decodeBody gave %v; decodeFrom %v", i, gotErr, wantErr)
		}
	}
}

func sameProblem(a, b error) bool {
	if a == nil || b == nil {
		return a == b
	}
	return reflect.DeepEqual(a, b)
}
