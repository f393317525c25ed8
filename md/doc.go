// Package md builds prompts as trees of nodes and renders them to Markdown,
// within a token budget when asked.
//
// A component is an ordinary Go function that returns a [Node]:
//
//	func Persona() md.Node {
//		return md.Sec(2, "Persona", md.UL(md.Item(md.Text("Be brief."))))
//	}
//
// The building blocks are [Text] and [Raw], [Block] (with [Doc], [Lines],
// [Span], [P]), [Heading] ([Title]), [Bold], [Italic], [Code], [Link], [Br],
// [Hr], [CodeBlock] ([Fence]), [List] ([UL], [OL], [Item]), [TitledList],
// [XMLElement] ([XML]), [QuoteBlock] ([Quote]), [Table] and [Section]
// ([Sec]), plus the combinators [If], [Iff], [Map] and [Group]. [Func] is the
// escape hatch for output nothing else gives.
//
// # Trust boundary
//
// [Text] is for workspace and user text: it is escaped inside [XML] (all of
// & < > " ') and written as it is in Markdown, where loom does not try to
// neutralise the author's own formatting. [Raw] is for loom's own wording and
// is never escaped. Both always come out as valid UTF-8.
//
// # Budgets
//
// A [Scope] ([Named]) gives part of the tree a name, a priority, a
// truncation policy, the files it came from, and what to say when it is
// dropped. Its setters ([Scope.Prio], [Scope.Truncate], [Scope.From],
// [Scope.Otherwise], [Scope.OnDrop], and [XMLElement.Memo]) return a new
// node and leave the one they are called on as it was, so a tree that was
// rendered (and may be in a [Cache]) never changes; a call whose result is
// unused therefore does nothing, and a test over the whole module
// (TestNoSetterResultDiscarded) fails on one.
// A [Renderer] with [WithBudget] drops prioritised scopes, lowest
// first and the later of equals first, until the prompt fits; scopes without a
// priority are never dropped. The cutoff is found by a search over the drop
// order, guided by each scope's token count. A truncatable scope is cut at a
// line boundary, outside code fences, with a marker line saying what was cut.
// Then the dropped scopes that still fit are kept back, highest priority
// first, so that the kept set is maximal: keeping any one scope that was
// dropped to fit as well would go over the budget, counted exactly (a notice
// that goes away with the last scope dropped under it included).
// The [Report] lists every named scope and every scope that was dropped or cut,
// with its tokens, status and reason: nothing is dropped in silence. Its lines
// ([Report.Sections]) are made the first time they are asked for.
//
// # Pipeline
//
// A render is one or more passes over the tree. A pass walks it once,
// appending to one buffer, and keeps a record per scope (its text, where it
// began, its count) for the report and the counts. With a [Cache], a scope
// rendered before in the same context is copied from the cache with its
// records instead of walked, and a scope's count is composed from the
// counts of the scopes inside it where the encoding allows ([Additive]):
// a re-render after one file changed walks and counts little more than that
// file. Without a budget a render is that one pass.
//
// With a budget, [Renderer.Render] runs these steps:
//
//   - plan: list the scopes in document order (found through [Children],
//     the one function that knows what each kind of node holds) and the
//     prioritised ones in drop order; a plan marks which are dropped for
//     the next pass.
//   - size: the first pass drops nothing and gives every scope's cost.
//     Every pass of the search sizes: it writes the large scopes it finds
//     whole in the cache as short stand-ins, as only its count is wanted;
//     the answer is rendered once more in full.
//   - cut: guess how many scopes of the drop order must go from the costs,
//     render that cut, then gallop and bisect to the smallest cut that fits
//     whose one-shorter neighbour does not. The last scope dropped is cut
//     at a line instead when it is truncatable and that fits.
//   - fill: give back the dropped scopes that still fit, highest priority
//     first, in batches that are rendered and, when over, bisected to the
//     longest prefix that fits; a scope that did not fit is retried when
//     the room grows or its notice can shrink.
//   - probe: in a long fill, one tracking pass tells exactly what keeping
//     each list item would add, which rules most items out without a pass.
//   - report: the answer's records become the [Report] lines when first
//     asked for.
//
// The steps live in plan.go, sizing.go, search.go, fill.go, probe.go and
// report.go. The tests check the search against a plain reference solver
// (reference_test.go) on 10,000 random trees: a pass per candidate drop
// set, counted whole, must give the same prompt byte for byte.
//
// # Where loom differs from nao's renderer
//
// nao renders JSX to Markdown with a small recursive function. loom keeps its
// model (blocks joined by separators, lists, titled lists, XML, quotes) and
// drops its bugs. Each example shows nao's output, then loom's:
//
//   - A component keeps its parent's separator. nao resets it to "" for a
//     function component that returns a fragment, so a heading and its text
//     run together: Block["BASE", F()] where F returns [Title "A", "b"] gives
//     "BASE\n\n## Ab" in nao and "BASE\n\n## A\n\nb" here, because a [Group]
//     takes the separator of the block it sits in.
//   - A quote prefixes every line. nao's Quote is a no-op, so "line one\nline
//     two" stays unquoted; here it is "> line one\n> line two".
//   - An empty child adds no separator. In nao, Block[a, "", b] gives
//     "a\n\n\n\nb", an empty RULES.md adds a stray "---" and an empty tail leaves
//     a trailing blank line; here it is "a\n\nb" and a block whose children are
//     all empty renders nothing, prefix included.
//   - Nested lists indent the same way at every depth, to the item's text:
//     List[A, List[B, List[C1, C2]], D] gives "- A\n\t- B\n\t\t\t- C1\n\t\t- C2\n- D"
//     in nao and "- A\n  - B\n    - C1\n    - C2\n- D" here. Ordered numbering
//     counts items only: nao numbers OL[a, List[x], b] as "1. a … 3. b"; here it
//     is "1. a\n   - x\n2. b". Continuation lines of a multi-line item are
//     indented too, which nao does not do.
//   - A list after inline text starts on its own line: Span["Columns are:",
//     List[id, name]] is "Columns are:- id\n- name" in nao and
//     "Columns are:\n- id\n- name" here.
//   - XML text is escaped as well as attributes, and short content stays on
//     the tag's line: XML memory {type: fact} ["The user prefers dark mode."]
//     gives "<memory type=\"fact\">\n\tThe user prefers dark mode.\n</memory>" in
//     nao and "<memory type=\"fact\">The user prefers dark mode.</memory>" here;
//     longer content is indented by two spaces, and an empty element is
//     self-closed ("<t/>", where nao writes "<t>\n\n</t>").
//   - A titled list marks a cut with "…(2 more)" (nao: "...(2 more)") and
//     renders nothing when it has no items (nao: "T:\n").
//   - Code fences grow to hold backticks in the code, and inline code spans
//     do the same.
//
// Block prefixes and indents behave as in nao ("---" prefix on
// Block[Hello, World] with separator "\n" gives "---Hello\nWorld"), except that
// blank lines get no indent, so no line ends in spaces.
package md
