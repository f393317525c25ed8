// Command reflectmethod links text/template, whose field lookup calls
// methods by a name known only at run time: the linker must flag it, or
// TestLoomLinksNoMethodByName could not fail.
package main

import (
	"os"
	"text/template"
)

func main() {
	t := template.Must(template.New("x").Parse("{{.Name}}\n"))
	_ = t.Execute(os.Stdout, struct{ Name string }{"a"})
}
