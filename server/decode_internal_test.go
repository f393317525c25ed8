package server

import (
	"bytes"
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
