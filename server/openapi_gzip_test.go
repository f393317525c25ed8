package server_test

import (
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"os"
	"testing"

	"github.com/loomctx/loom/server"
)

// The embedded, compressed document is openapi.json as it is in the
// repository: edit openapi.json, then run go generate ./server.
func TestOpenAPIGzipCurrent(t *testing.T) {
	want, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(server.OpenAPI(), want) {
		t.Fatal("the embedded openapi.json.gz is not openapi.json: run go generate ./server")
	}
}

// GET /v1/openapi.json answers compressed to a client that takes gzip,
// plain to one that does not (or refuses gzip with q=0), the same
// document either way.
func TestOpenAPIServedCompressedOrPlain(t *testing.T) {
	want, err := os.ReadFile("openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	_, c := newServer(t, server.Options{})
	get := func(ae string) (http.Header, []byte) {
		req, _ := http.NewRequest("GET", c.base+"/v1/openapi.json", nil)
		req.Header.Set("Accept-Encoding", ae) // set, so the client does not decompress
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, err := io.ReadAll(res.Body)
		if err != nil || res.StatusCode != 200 {
			t.Fatalf("Accept-Encoding %q: %d %v", ae, res.StatusCode, err)
		}
		return res.Header, body
	}
	for _, ae := range []string{"gzip", "br, gzip;q=0.5", "deflate, GZIP"} {
		h, body := get(ae)
		if h.Get("Content-Encoding") != "gzip" || h.Get("Vary") != "Accept-Encoding" {
			t.Fatalf("Accept-Encoding %q: Content-Encoding %q, Vary %q", ae, h.Get("Content-Encoding"), h.Get("Vary"))
		}
		if len(body) > len(want)/5 {
			t.Errorf("Accept-Encoding %q: %d bytes for a %d-byte document", ae, len(body), len(want))
		}
		zr, err := gzip.NewReader(bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(zr)
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("Accept-Encoding %q: the decompressed body is not openapi.json (%v)", ae, err)
		}
	}
	for _, ae := range []string{"identity", "gzip;q=0", "br"} {
		h, body := get(ae)
		if h.Get("Content-Encoding") != "" || !bytes.Equal(body, want) {
			t.Fatalf("Accept-Encoding %q: Content-Encoding %q, %d bytes; want openapi.json plain", ae, h.Get("Content-Encoding"), len(body))
		}
	}
}
