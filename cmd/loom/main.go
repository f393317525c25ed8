// Command loom assembles what an LLM agent sees — its system prompt and its
// message list — from a workspace folder.
package main

import "os"

func main() {
	os.Exit(run(os.Args[1:]))
}
