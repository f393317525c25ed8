package md

import "iter"

// Children yields the nodes directly inside n, in the order the renderer
// writes them: a group's or a scope's members, a block's, heading's,
// wrap's, element's or quote's children, a link's text, a list's items, a
// titled list's title and the items it shows (not those past Max), a
// table's header cells and then each row's, and a section's heading and
// body. Text, code and other leaves, nil and nil pointers have none.
//
// It is the one place that knows what each kind of node holds: the
// planner finds the scopes a render will meet through it, in the
// renderer's order, and so can any code that looks for scopes in a tree.
// A new kind of node that holds others is added here.
func Children(n Node) iter.Seq[Node] {
	return func(yield func(Node) bool) {
		each := func(ns []Node) bool {
			for _, c := range ns {
				if !yield(c) {
					return false
				}
			}
			return true
		}
		switch n := n.(type) {
		case Group:
			each(n)
		case *Scope:
			if n != nil {
				each(n.Children)
			}
		case *Block:
			if n != nil {
				each(n.Children)
			}
		case *Heading:
			if n != nil {
				each(n.Children)
			}
		case *Wrap:
			if n != nil {
				each(n.Children)
			}
		case *XMLElement:
			if n != nil {
				each(n.Children)
			}
		case *QuoteBlock:
			if n != nil {
				each(n.Children)
			}
		case *LinkNode:
			if n != nil {
				yield(n.Text)
			}
		case *List:
			if n != nil {
				each(n.Items)
			}
		case *TitledList:
			if n != nil && yield(n.Title) {
				items, _ := n.shown()
				each(items)
			}
		case *Table:
			if n != nil && each(n.Header) {
				for _, row := range n.Rows {
					if !each(row) {
						return
					}
				}
			}
		case *Section:
			if n != nil && yield(n.Heading) {
				each(n.Body)
			}
		}
	}
}
