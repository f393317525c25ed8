package jsonscan_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"

	"github.com/loomctx/loom/internal/jsonscan"
)

func compact(t *testing.T, b []byte) string {
	var out bytes.Buffer
	if err := json.Compact(&out, b); err != nil {
		t.Fatalf("not JSON: %q", b)
	}
	return out.String()
}

// FuzzSplitAgrees: on valid JSON, Object, ArrayLen and Elements find what encoding/json
// finds, in order.
func FuzzSplitAgrees(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":[1,{"c":"}"}],"d\u0065":"x\"y"}`, ` [ 1 , "a" , {"b":[]} , null ] `, `{}`, `[]`, `"s"`, `1`, `{"a":{"b":{"c":[[]]}}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return
		}
		var obj map[string]json.RawMessage
		isObj := json.Unmarshal(b, &obj) == nil && obj != nil
		members, ok := jsonscan.Object(b)
		if ok != isObj {
			t.Fatalf("%q: Object ok %v, encoding/json reads an object: %v", b, ok, isObj)
		}
		last := map[string]string{}
		for _, m := range members {
			var k string
			if json.Unmarshal(m.RawKey, &k) != nil || k != m.Key {
				t.Fatalf("%q: key %q decoded as %q", b, m.RawKey, m.Key)
			}
			last[m.Key] = compact(t, m.Value)
		}
		if ok && len(last) != len(obj) {
			t.Fatalf("%q: %d keys, encoding/json %d", b, len(last), len(obj))
		}
		for k, v := range obj {
			if last[k] != compact(t, v) {
				t.Fatalf("%q: %q = %s, encoding/json %s", b, k, last[k], v)
			}
		}
		var arr []json.RawMessage
		isArr := json.Unmarshal(b, &arr) == nil && arr != nil
		n, _, ok := jsonscan.ArrayLen(b, -1)
		if ok != isArr {
			t.Fatalf("%q: ArrayLen ok %v, encoding/json reads an array: %v", b, ok, isArr)
		}
		var elems [][]byte
		for i, e := range jsonscan.Elements(b) {
			if i != len(elems) {
				t.Fatalf("%q: Elements yields index %d for element %d", b, i, len(elems))
			}
			elems = append(elems, e)
		}
		if ok && n != len(elems) {
			t.Fatalf("%q: ArrayLen counts %d, Elements yields %d", b, n, len(elems))
		}
		if ok {
			if len(elems) != len(arr) {
				t.Fatalf("%q: %d elements, encoding/json %d", b, len(elems), len(arr))
			}
			for i := range arr {
				if compact(t, elems[i]) != compact(t, arr[i]) {
					t.Fatalf("%q: element %d %s, encoding/json %s", b, i, elems[i], arr[i])
				}
			}
		}
	})
}

func TestSkeleton(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{` { "message" : "long text here", "n": 12 , "ok":true} `, `{"message":"","n":12,"ok":true}`},
		{`{"long key name": "x", "a": ["long text", "y", {"b": "also long"}]}`, `{"long key name":"x","a":["","y",{"b":""}]}`},
		{`{"e": "with \" quote", "s": "a b"}`, `{"e":"","s":"a b"}`},
		{`"whole long string"`, `""`},
		{`[1, -2.5e3, null, false]`, `[1,-2.5e3,null,false]`},
	} {
		if got := string(jsonscan.Skeleton([]byte(c.in), 6)); got != c.want {
			t.Errorf("Skeleton(%s) = %s, want %s", c.in, got, c.want)
		}
	}
}

// FuzzSkeleton: on valid JSON, a skeleton keeping every string is the
// text compacted, and one keeping none decodes to the same tree with every
// string value emptied.
func FuzzSkeleton(f *testing.F) {
	for _, s := range []string{`{"a":1,"b":[1,{"c":"}"}],"d\u0065":"x\"y"}`, ` [ 1 , "a" , {"b":[]} , null ] `, `{}`, `"s"`, `{"a" : {"b":{"c":[[" x "]]}}}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return
		}
		if got, want := string(jsonscan.Skeleton(b, len(b)+1)), compact(t, b); got != want {
			t.Fatalf("Skeleton(%q, all kept) = %q, want %q", b, got, want)
		}
		decode := func(b []byte) (v any, err error) {
			dec := json.NewDecoder(bytes.NewReader(b))
			dec.UseNumber() // numbers past float64 are valid JSON too
			return v, dec.Decode(&v)
		}
		want, _ := decode(b)
		empty := jsonscan.Skeleton(b, 0)
		got, err := decode(empty)
		if err != nil {
			t.Fatalf("Skeleton(%q, none kept) = %q: %v", b, empty, err)
		}
		if !reflect.DeepEqual(got, emptied(want)) {
			t.Fatalf("Skeleton(%q, none kept) = %q", b, empty)
		}
	})
}

func emptied(v any) any {
	switch v := v.(type) {
	case string:
		return ""
	case []any:
		for i := range v {
			v[i] = emptied(v[i])
		}
	case map[string]any:
		for k := range v {
			v[k] = emptied(v[k])
		}
	}
	return v
}

// FuzzLookup: on valid JSON, Lookup finds what encoding/json decodes into
// a json.RawMessage field.
func FuzzLookup(f *testing.F) {
	for _, s := range []string{`{"content":"a","role":"user"}`, `{"Content":[1],"content":{"x":"}"}}`, `{"cont\u0065nt" : 5 }`, `{"CONTENT":null}`, `[]`, `{}`, `"content"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if !json.Valid(b) {
			return
		}
		var want struct {
			Content json.RawMessage `json:"content"`
		}
		isObj := json.Unmarshal(b, &want) == nil && bytes.HasPrefix(bytes.TrimLeft(b, " \t\r\n"), []byte("{"))
		got, found := jsonscan.Lookup(b, "content")
		if !isObj {
			if found {
				t.Fatalf("Lookup(%q) found %q in what is not an object", b, got)
			}
			return
		}
		if string(got) != string(want.Content) || found != (want.Content != nil) {
			t.Fatalf("Lookup(%q) = %q, %v; encoding/json: %q", b, got, found, want.Content)
		}
	})
}

func TestArrayLen(t *testing.T) {
	for _, c := range []struct {
		in       string
		max, n   int
		more, ok bool
	}{
		{`[1, "a", {"b":[2,3]}]`, 5, 3, false, true},
		{`[1,2,3]`, 3, 3, false, true},
		{`[1,2,3]`, 2, 2, true, true},
		{`[1,2,3]`, 0, 0, true, true},
		{`[]`, 0, 0, false, true},
		{`[1,2,3]`, -1, 3, false, true},
		{` [ ] `, 1, 0, false, true},
		{`{"a":1}`, 5, 0, false, false},
	} {
		n, more, ok := jsonscan.ArrayLen([]byte(c.in), c.max)
		if n != c.n || more != c.more || ok != c.ok {
			t.Errorf("ArrayLen(%s, %d) = %d, %v, %v; want %d, %v, %v", c.in, c.max, n, more, ok, c.n, c.more, c.ok)
		}
	}
}

// Elements stops where its loop does.
func TestElementsBreak(t *testing.T) {
	var got []string
	for i, e := range jsonscan.Elements([]byte(`[1, "a", {"b":[2,3]}, 4]`)) {
		if i == 2 {
			break
		}
		got = append(got, string(e))
	}
	if !reflect.DeepEqual(got, []string{"1", `"a"`}) {
		t.Errorf("got %q", got)
	}
	for range jsonscan.Elements([]byte(`{"a":1}`)) {
		t.Error("an object has elements")
	}
}

func TestObjectLen(t *testing.T) {
	for _, c := range []struct {
		in       string
		max, n   int
		more, ok bool
	}{
		{`{"a":1,"b":[1,2],"c":{"d":2}}`, 5, 3, false, true},
		{`{"a":1,"b":2,"c":3}`, 3, 3, false, true},
		{`{"a":1,"b":2,"c":3}`, 2, 2, true, true},
		{` { } `, 0, 0, false, true},
		{`{"a":1}`, 0, 0, true, true},
		{`{"a":1,"a":2}`, -1, 2, false, true},
		{`[1,2]`, 5, 0, false, false},
		{`"x"`, 5, 0, false, false},
	} {
		n, more, ok := jsonscan.ObjectLen([]byte(c.in), c.max)
		if n != c.n || more != c.more || ok != c.ok {
			t.Errorf("ObjectLen(%s, %d) = %d, more %v, ok %v; want %d, %v, %v", c.in, c.max, n, more, ok, c.n, c.more, c.ok)
		}
	}
}
