package md

import (
	"fmt"
	"os"
)

var dbg = os.Getenv("MDDBG") != ""

func dbgf(f string, a ...any) {
	if dbg {
		fmt.Fprintf(os.Stderr, f, a...)
	}
}
