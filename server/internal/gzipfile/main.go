// Command gzipfile writes FILE.gz beside each FILE named on its command
// line, compressed at the best level with an empty header (no name, no
// time), so the same input always gives the same bytes. The server embeds
// openapi.json this way (go generate ./server).
package main

import (
	"bytes"
	"compress/gzip"
	"fmt"
	"os"
)

func main() {
	for _, name := range os.Args[1:] {
		if err := compress(name); err != nil {
			fmt.Fprintln(os.Stderr, "gzipfile:", err)
			os.Exit(1)
		}
	}
}

func compress(name string) error {
	data, err := os.ReadFile(name)
	if err != nil {
		return err
	}
	var b bytes.Buffer
	zw, err := gzip.NewWriterLevel(&b, gzip.BestCompression)
	if err != nil {
		return err
	}
	if _, err := zw.Write(data); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	tmp := name + ".gz.tmp"
	if err := os.WriteFile(tmp, b.Bytes(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, name+".gz")
}
