package server

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"reflect"
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
		if errA == nil && !reflect.DeepEqual(a, b) {
			t.Fatalf("%q:\nDecodeJSON %+v\nfast       %+v", body, a, b)
		}
	})
}

// The fast way is taken for a plain body; the test above would pass too if
// it never were.
func TestCutHistoryTakesPlainBodies(t *testing.T) {
	rest, hist, ok := cutHistory([]byte(`{"message":"hi", "history":[{"role":"user","content":"a"}, {"role":"assistant"}],"channel":"slack"}`))
	if !ok || string(rest) != `{"message":"hi","channel":"slack"}` || len(hist) != 2 || string(hist[1]) != `{"role":"assistant"}` {
		t.Errorf("cutHistory = %s, %q, %v", rest, hist, ok)
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
