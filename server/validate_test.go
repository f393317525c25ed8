package server_test

import (
	"net/http"
	"strings"
	"testing"
)

// failTB records a validation failure instead of failing the test.
type failTB struct {
	testing.TB
	failed string
}

func (f *failTB) Helper() {}
func (f *failTB) Fatalf(format string, args ...any) {
	f.failed = format
	panic(f)
}

func validates(t *testing.T, method, path string, status int, ct, body string) (ok bool) {
	tb := &failTB{TB: t}
	defer func() {
		if r := recover(); r != nil {
			if r != tb {
				panic(r)
			}
			ok = false
		}
	}()
	h := http.Header{}
	h.Set("Content-Type", ct)
	validateResponse(tb, method, path, &response{Status: status, Header: h, Body: []byte(body)})
	return tb.failed == ""
}

// The validator itself must reject what the document does not allow;
// otherwise every handler test would pass whatever the server sent.
func TestValidatorRejects(t *testing.T) {
	good := `{"encoding":"o200k_base","tokens":2,"bytes":11}`
	if !validates(t, "POST", "/v1/tokens", 200, "application/json", good) {
		t.Fatal("a valid body was rejected")
	}
	for name, tc := range map[string][4]string{
		"missing field":    {"POST", "/v1/tokens", "200", `{"encoding":"o200k_base","tokens":2}`},
		"wrong type":       {"POST", "/v1/tokens", "200", strings.Replace(good, "2", `"2"`, 1)},
		"extra field":      {"POST", "/v1/tokens", "200", strings.Replace(good, "}", `,"x":1}`, 1)},
		"undocumented 201": {"POST", "/v1/tokens", "201", good},
		"problem shape":    {"POST", "/v1/tokens", "400", `{"status":400}`},
		"unknown path":     {"GET", "/v1/elsewhere", "200", `{}`},
	} {
		status := map[string]int{"200": 200, "201": 201, "400": 400}[tc[2]]
		ct := "application/json"
		if status >= 400 {
			ct = "application/problem+json"
		}
		if validates(t, tc[0], tc[1], status, ct, tc[3]) {
			t.Errorf("%s: accepted", name)
		}
	}
}
