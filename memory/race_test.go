//go:build race

package memory

// raceEnabled scales the heaviest tokenizer tests down under the race
// detector, which slows the tokenizer about tenfold.
const raceEnabled = true
