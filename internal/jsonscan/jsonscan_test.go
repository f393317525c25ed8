package jsonscan_test

import (
	"bytes"
	"encoding/json"
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

// FuzzSplitAgrees: on valid JSON, Object and Array find what encoding/json
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
		elems, ok := jsonscan.Array(b)
		if ok != isArr {
			t.Fatalf("%q: Array ok %v, encoding/json reads an array: %v", b, ok, isArr)
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
