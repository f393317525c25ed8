// Genranks writes the rank tables that package tokens embeds: one file per
// encoding, in the format of package ranktable, taken from the vocabularies
// tiktoken-go ships. Run it from package tokens with go generate; its output
// is committed, so building loom never runs it.
//
//	go run ./internal/genranks -out .
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/loomctx/loom/tokens/internal/ranktable"
	"github.com/tiktoken-go/tokenizer/codec"
)

func main() {
	out := flag.String("out", ".", "folder to write <encoding>.ranks into")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("genranks: ")
	for _, c := range []*codec.Codec{codec.NewO200kBase(), codec.NewCl100kBase()} {
		if err := write(c, *out); err != nil {
			log.Fatal(err)
		}
	}
}

// write reads the codec's vocabulary back rank by rank through Decode, the
// only way the library exposes it, and writes it as a rank table.
func write(c *codec.Codec, dir string) error {
	c.SetErrorMode(codec.ErrorModeNone) // tokens are bytes, often not whole UTF-8
	var tokens []string
	misses := 0
	for id := uint(0); misses < 1000; id++ {
		tok, err := c.Decode([]uint{id})
		if err != nil {
			misses++ // past the end, and the gaps where special tokens sit
			tokens = append(tokens, "")
			continue
		}
		misses = 0
		tokens = append(tokens, tok)
	}
	for len(tokens) > 0 && tokens[len(tokens)-1] == "" {
		tokens = tokens[:len(tokens)-1]
	}
	enc, probe, err := ranktable.Build(tokens)
	if err != nil {
		return fmt.Errorf("%s: %v", c.GetName(), err)
	}
	path := filepath.Join(dir, c.GetName()+".ranks")
	if err := os.WriteFile(path, enc, 0o644); err != nil {
		return err
	}
	fmt.Printf("%s: %d ranks, %d bytes, longest probe %d\n", path, len(tokens), len(enc), probe)
	return nil
}
