package redact

import (
	"strings"
	"testing"
)

func TestString(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"no url here", "no url here"},
		{"llm: cannot reach https://bob:hunter2@gw.example/v1: refused",
			"llm: cannot reach https://bob:REDACTED@gw.example/v1: refused"},
		{`Post "https://gw.example/v1/chat?api-key=sk-123&x=1": EOF`,
			`Post "https://gw.example/v1/chat?api-key=REDACTED&x=1": EOF`},
		{"https://h.example/?key=a&token=b&model=m&API_KEY=c&access_token=d",
			"https://h.example/?key=REDACTED&token=REDACTED&model=m&API_KEY=REDACTED&access_token=REDACTED"},
		{"http://user@h.example/v1", "http://user@h.example/v1"}, // a user name alone is no secret
		{"two: http://a:p1@x.example and https://y.example/?token=t2",
			"two: http://a:REDACTED@x.example and https://y.example/?token=REDACTED"},
		{"bad %zz query: https://h.example/?key=s3cr%zz", "bad %zz query: https://h.example/?key=REDACTED"},
		{"unparsable: http://u:pw@[::1/x?token=t", "unparsable: http://u:REDACTED@[::1/x?token=REDACTED"},
	} {
		got := String(c.in)
		if got != c.want {
			t.Errorf("String(%q)\n got  %q\n want %q", c.in, got, c.want)
		}
		for _, secret := range []string{"hunter2", "sk-123", "p1", "t2", "s3cr", ":pw@"} {
			if strings.Contains(got, secret) {
				t.Errorf("%q still holds %q", got, secret)
			}
		}
	}
}

// Whatever text surrounds it, a URL's password and key never survive.
func FuzzString(f *testing.F) {
	f.Add("see", "hunter22", "sk0123456")
	f.Add("a\"b'c", "pw999999", "tok99999")
	f.Fuzz(func(t *testing.T, prefix, pw, key string) {
		frame := prefix + " https://u:@h.example/p?api-key= tail REDACTED"
		if !alnum(pw) || !alnum(key) || strings.Contains(frame, pw) || strings.Contains(frame, key) {
			return
		}
		out := String(prefix + " https://u:" + pw + "@h.example/p?api-key=" + key + " tail")
		if strings.Contains(out, pw) || strings.Contains(out, key) {
			t.Errorf("secret left in %q", out)
		}
	})
}

func alnum(s string) bool {
	if len(s) < 6 {
		return false
	}
	for _, r := range s {
		if !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9') {
			return false
		}
	}
	return true
}

func TestCredentials(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`{"error":{"message":"Incorrect API key provided: sk-live-abcdef123456. Header was Bearer sk-live-abcdef123456"}}`,
			`{"error":{"message":"Incorrect API key provided: REDACTED. Header was Bearer REDACTED"}}`},
		{`got "Authorization": "Bearer other-token-9999"`, `got "Authorization": "Bearer REDACTED"`},
		{`authorization=Basic dXNlcjpwYXNz`, `authorization=Basic REDACTED`},
		{`{"x-api-key":"sk-ant-zzzzzzzz"}`, `{"x-api-key":"REDACTED"}`},
		{`see https://u:pw@host/x?api_key=k1k1`, `see https://u:REDACTED@host/x?api_key=REDACTED`},
		{`model overloaded; retry later`, `model overloaded; retry later`},
		{`the bearer of bad news`, `the bearer of bad news`}, // a token is 4 bytes or more
	} {
		if got := Credentials(c.in, "sk-live-abcdef123456"); got != c.want {
			t.Errorf("Credentials(%q)\n got %q\nwant %q", c.in, got, c.want)
		}
	}
}
