package md

import (
	"fmt"
	"io"
)

// Node is one part of a prompt tree. Nodes are small inspectable values built
// by the constructors in this package; the renderer walks them. A tree is
// never changed by rendering, so one tree may be rendered from several
// goroutines at once.
type Node interface {
	render(r *renderer, buf []byte) []byte
}

// Text is workspace or user text. It is written as it is in Markdown and
// escaped inside [XML]. Invalid UTF-8 is replaced with U+FFFD.
type Text string

// Raw is loom's own trusted text: it is never escaped, not even inside XML.
// Invalid UTF-8 is still replaced with U+FFFD.
type Raw string

// Textf formats like fmt.Sprintf and returns the result as [Text].
func Textf(format string, args ...any) Text { return Text(fmt.Sprintf(format, args...)) }

// Group is a list of nodes with no layout of its own: its children are joined
// by the separator of the block it sits in, exactly as if they had been
// written there one by one. A component that returns several nodes returns a
// Group, and so keeps its parent's separator.
type Group []Node

// Block joins its non-empty children with Sep. When anything was written, it
// puts Prefix before the first line and Indent before every non-blank line.
// An empty child adds no separator, and a block whose children are all empty
// renders nothing at all, prefix included.
type Block struct {
	Sep      string
	Prefix   string
	Indent   string
	Children []Node
}

// Doc is a block of children separated by blank lines, the Markdown way.
func Doc(children ...Node) *Block { return &Block{Sep: "\n\n", Children: children} }

// Lines is a block of children separated by single newlines.
func Lines(children ...Node) *Block { return &Block{Sep: "\n", Children: children} }

// Span joins its children with nothing in between: inline content.
func Span(children ...Node) *Block { return &Block{Children: children} }

// P is a paragraph: inline content that its parent block separates from the
// rest.
func P(children ...Node) *Block { return Span(children...) }

// Heading is a Markdown ATX heading, "## text". Level is clamped to 1–6. A
// heading with empty content renders nothing.
type Heading struct {
	Level    int
	Children []Node
}

// Title returns a heading of the given level.
func Title(level int, children ...Node) *Heading { return &Heading{Level: level, Children: children} }

// Wrap surrounds inline content with Open and Close, as bold and italic do.
// Empty content renders nothing.
type Wrap struct {
	Open, Close string
	Children    []Node
}

// Bold is **strong** text.
func Bold(children ...Node) *Wrap { return &Wrap{Open: "**", Close: "**", Children: children} }

// Italic is *emphasised* text.
func Italic(children ...Node) *Wrap { return &Wrap{Open: "*", Close: "*", Children: children} }

// InlineCode is a code span. The fence grows when the code holds backticks.
type InlineCode string

// Code returns an inline code span.
func Code(s string) InlineCode { return InlineCode(s) }

// LinkNode is a Markdown link, [text](href).
type LinkNode struct {
	Href string
	Text Node
}

// Link returns a link to href whose visible part is text.
func Link(href string, text Node) *LinkNode { return &LinkNode{Href: href, Text: text} }

// Br is a line break inside inline content.
func Br() Raw { return Raw("\n") }

// Hr is a horizontal rule, "---".
func Hr() Raw { return Raw("---") }

// CodeBlock is a fenced code block. Info is the info string ("sql",
// "sql title=query"). The fence is longer than any run of backticks in Code,
// so the block can hold any text.
type CodeBlock struct {
	Info string
	Code string
}

// Fence returns a fenced code block.
func Fence(info, code string) *CodeBlock { return &CodeBlock{Info: info, Code: code} }

// List is a bulleted or numbered list. Each child that renders something is
// one item; a nested *List child belongs to the item before it and is
// indented under it. Numbering counts items only, and continuation lines of
// an item are indented to its text, at every depth. A list that follows
// inline text starts on its own line.
type List struct {
	Ordered bool
	Items   []Node
}

// UL returns an unordered list.
func UL(items ...Node) *List { return &List{Items: items} }

// OL returns an ordered list.
func OL(items ...Node) *List { return &List{Ordered: true, Items: items} }

// Item is one list item: inline content, possibly followed by a nested list.
func Item(children ...Node) *Block { return Span(children...) }

// TitledList is "Title:" followed by a list of at most Max items (0 means no
// limit) and, when items were cut, a "…(N more)" line. It renders nothing when
// it has no items.
type TitledList struct {
	Title Node
	Max   int
	Items []Node
}

// Attr is one XML attribute.
type Attr struct{ Name, Value string }

// XMLElement is an XML element. Text inside it and attribute values are
// escaped (all five of & < > " '). Content without line breaks stays on the
// tag's line; longer content goes on its own lines, indented by two spaces.
// An element without content is written self-closed.
type XMLElement struct {
	Tag      string
	Attrs    []Attr
	Children []Node

	memo *XMLMemo // see [XMLElement.Memo]
}

// XML returns an element with the given attributes and children.
func XML(tag string, attrs []Attr, children ...Node) *XMLElement {
	return &XMLElement{Tag: tag, Attrs: attrs, Children: children}
}

// QuoteBlock prefixes every line of its content with "> ".
type QuoteBlock struct{ Children []Node }

// Quote returns a block quote of its children, separated by blank lines.
func Quote(children ...Node) *QuoteBlock { return &QuoteBlock{Children: children} }

// Table is a GitHub-flavoured Markdown table. Cells are rendered inline; a
// "|" in a cell is escaped and a line break becomes a space.
type Table struct {
	Header []Node
	Rows   [][]Node
}

// Section is a heading followed by a body. When the body renders nothing,
// the heading goes too; and when the budget dropped every droppable scope in
// the body, the whole section goes, introduction and notices included, since
// they were there for what was dropped.
type Section struct {
	Heading Node
	Body    []Node
}

// Sec returns a section: a heading of the given level and text, then the
// body, separated by blank lines.
func Sec(level int, title string, body ...Node) *Section {
	return &Section{Heading: Title(level, Text(title)), Body: body}
}

// If returns n when cond is true, and nil ("nothing") otherwise.
func If(cond bool, n Node) Node {
	if cond {
		return n
	}
	return nil
}

// Iff calls fn and returns its node only when cond is true, so fn may use
// values that are valid only then.
func Iff(cond bool, fn func() Node) Node {
	if cond {
		return fn()
	}
	return nil
}

// Map turns each item into a node and returns them as a [Group].
func Map[T any](items []T, fn func(T) Node) Group {
	g := make(Group, 0, len(items))
	for _, it := range items {
		g = append(g, fn(it))
	}
	return g
}

// FuncNode renders through a function writing to an io.Writer: the escape
// hatch for output no other node gives. Its output is opaque to the budget:
// it is never dropped or cut on its own.
type FuncNode func(w io.Writer) error

// Func returns a node that renders by calling fn.
func Func(fn func(w io.Writer) error) FuncNode { return FuncNode(fn) }
