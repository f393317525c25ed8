// Package template fills loom's own text files: the prompt's wording, the
// runtime block, the extraction and consolidation requests and the
// inspector's pages. It reads the part of text/template's language those
// files use, with the same meaning:
//
//   - {{.A.B}} (a struct field or a map key, through pointers and
//     interfaces), {{.}}, "strings", `raw strings`, numbers, true, false;
//   - {{if X}} … {{else if Y}} … {{else}} … {{end}} and {{range X}} … {{else}}
//     … {{end}} over slices, arrays and string-keyed maps (in key order);
//   - {{define "name"}} … {{end}} and {{template "name" X}};
//   - function calls with arguments and parentheses: the built-in eq, ne,
//     not and print, and those given with [Template.Funcs];
//   - {{- and -}}, which trim the white space beside the action, and
//     {{/* comments */}}.
//
// Why not text/template: its field lookup also calls methods by name
// (reflect's MethodByName), and a binary that links such a call has to keep
// every exported method of every type that might reach it, a tenth of
// loom's binary. This package reads fields and map keys only. A template
// that names a method, or uses a part of the language not listed, fails to
// parse or to execute with an error that says so; the files are loom's own,
// so their tests find it.
//
// A template made with [NewHTML] escapes every value it prints for HTML
// text and quoted attribute values, as html/template does there (the same
// characters, the same entities), except a value of type [HTML]. It does
// not know other contexts (script, style, URLs): its pages put values only
// in text and in quoted attributes.
package template

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"reflect"
	"strings"
)

// FuncMap names the functions a template may call. Each is a Go function
// with one result, or two where the second is an error.
type FuncMap map[string]any

// HTML is text that a template made with [NewHTML] prints as it is: markup
// that is already safe.
type HTML string

// Template is a parsed file, or a set of named templates that share their
// definitions and functions.
type Template struct {
	name string
	root []node // nil until parsed
	set  *set
}

// set is what the templates of one family share.
type set struct {
	byName     map[string]*Template
	funcs      map[string]reflect.Value
	missingErr bool
	html       bool
}

// New returns an empty template for text.
func New(name string) *Template {
	t := &Template{name: name, set: &set{byName: map[string]*Template{}, funcs: map[string]reflect.Value{}}}
	t.set.byName[name] = t
	return t
}

// NewHTML returns an empty template that escapes what it prints for HTML.
func NewHTML(name string) *Template {
	t := New(name)
	t.set.html = true
	return t
}

// Must returns t, and panics if err is not nil.
func Must(t *Template, err error) *Template {
	if err != nil {
		panic(err)
	}
	return t
}

// Name returns the template's name.
func (t *Template) Name() string { return t.name }

// Option sets "missingkey=error" (a missing map key is an error) or
// "missingkey=default"/"missingkey=invalid" (it prints "<no value>").
func (t *Template) Option(opts ...string) *Template {
	for _, o := range opts {
		switch o {
		case "missingkey=error":
			t.set.missingErr = true
		case "missingkey=default", "missingkey=invalid":
			t.set.missingErr = false
		default:
			panic("template: unknown option " + o)
		}
	}
	return t
}

// Funcs adds functions the template may call. It panics if one is not a
// function with one result, or two where the second is an error.
func (t *Template) Funcs(m FuncMap) *Template {
	for name, f := range m {
		v := reflect.ValueOf(f)
		if v.Kind() != reflect.Func {
			panic("template: " + name + " is not a function")
		}
		ft := v.Type()
		if ft.NumOut() < 1 || ft.NumOut() > 2 || ft.NumOut() == 2 && ft.Out(1) != errorType {
			panic("template: " + name + " must return one value, or a value and an error")
		}
		t.set.funcs[name] = v
	}
	return t
}

// Lookup returns the template of that name in t's family, or nil.
func (t *Template) Lookup(name string) *Template { return t.set.byName[name] }

// New returns an empty template in t's family, sharing its definitions,
// functions and options.
func (t *Template) New(name string) *Template {
	nt := &Template{name: name, set: t.set}
	t.set.byName[name] = nt
	return nt
}

// Parse reads text as t's body; its {{define}}s join t's family.
func (t *Template) Parse(text string) (*Template, error) {
	p := &parser{src: text, name: t.name, set: t.set}
	body, err := p.parseAll()
	if err != nil {
		return nil, err
	}
	if body != nil || t.root == nil {
		t.root = body
	}
	return t, nil
}

// ParseFS parses the files that match the patterns, each as a template
// named for its base name; t itself is the one whose name is t's, if any.
func (t *Template) ParseFS(fsys fs.FS, patterns ...string) (*Template, error) {
	var files []string
	for _, p := range patterns {
		m, err := fs.Glob(fsys, p)
		if err != nil {
			return nil, err
		}
		if len(m) == 0 {
			return nil, fmt.Errorf("template: pattern matches no files: %#q", p)
		}
		files = append(files, m...)
	}
	for _, f := range files {
		b, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, err
		}
		name := path.Base(f)
		tt := t.set.byName[name]
		if tt == nil {
			tt = t.New(name)
		}
		if _, err := tt.Parse(string(b)); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// ParseFS returns a text template named for the first file that matches,
// with every matching file parsed into its family.
func ParseFS(fsys fs.FS, patterns ...string) (*Template, error) {
	var first string
	for _, p := range patterns {
		if m, err := fs.Glob(fsys, p); err == nil && len(m) > 0 {
			first = path.Base(m[0])
			break
		}
	}
	return New(first).ParseFS(fsys, patterns...)
}

// Execute fills t with data and writes the result to w.
func (t *Template) Execute(w io.Writer, data any) error {
	if t.root == nil {
		return fmt.Errorf("template: %q is an incomplete or empty template", t.name)
	}
	s := &state{w: w, set: t.set, name: t.name}
	s.walk(reflect.ValueOf(data), t.root)
	return s.err
}

// ExecuteTemplate fills the template of that name in t's family.
func (t *Template) ExecuteTemplate(w io.Writer, name string, data any) error {
	tt := t.set.byName[name]
	if tt == nil {
		return fmt.Errorf("template: no template %q associated with template %q", name, t.name)
	}
	return tt.Execute(w, data)
}

// HTMLEscapeString returns s with the characters that are special in HTML
// text and attribute values written as entities, as text/template's
// function of the same name does.
func HTMLEscapeString(s string) string {
	return strings.NewReplacer("\x00", "\uFFFD", `"`, "&#34;", "'", "&#39;", "&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}

// htmlEscaper is html/template's escaping of a value printed in text or in a
// quoted attribute: it also writes + as an entity.
var htmlEscaper = strings.NewReplacer("\x00", "\uFFFD", `"`, "&#34;", "'", "&#39;", "+", "&#43;", "&", "&amp;", "<", "&lt;", ">", "&gt;")

var (
	errorType    = reflect.TypeFor[error]()
	stringerType = reflect.TypeFor[fmt.Stringer]()
	htmlType     = reflect.TypeFor[HTML]()
)

// ---- parse ----

type nodeKind int

const (
	textNode nodeKind = iota
	actionNode
	ifNode
	rangeNode
	templateNode
)

type node struct {
	kind  nodeKind
	line  int
	text  string // textNode; templateNode: the name
	pipe  *expr  // actionNode, ifNode, rangeNode, templateNode (may be nil)
	list  []node // ifNode, rangeNode: the body
	elseL []node // ifNode, rangeNode: the else branch
}

type exprKind int

const (
	fieldExpr exprKind = iota // .A.B, or . when fields is empty
	constExpr                 // a literal
	callExpr                  // a function with arguments
	subExpr                   // (call) followed by .A.B
)

type expr struct {
	kind   exprKind
	fields []string
	val    reflect.Value // constExpr
	fn     string        // callExpr
	args   []*expr       // callExpr
	sub    *expr         // subExpr
}

type parser struct {
	src  string
	pos  int
	line int
	name string
	set  *set
}

func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("template: %s:%d: %s", p.name, p.line+1, fmt.Sprintf(format, args...))
}

// token is one action: its words, and where it ended.
type action struct {
	line      int
	words     string
	trimLeft  bool
	trimRight bool
}

// parseAll parses the whole source; it returns the body outside {{define}}s,
// nil when that body is only white space.
func (p *parser) parseAll() ([]node, error) {
	list, end, err := p.parseList(true)
	if err != nil {
		return nil, err
	}
	if end != "" {
		return nil, p.errorf("unexpected {{%s}}", end)
	}
	for _, n := range list {
		if n.kind != textNode || strings.TrimSpace(n.text) != "" {
			return list, nil
		}
	}
	return nil, nil
}

// parseList reads nodes until {{end}} or {{else…}} (returned as end, with
// the action's words) or, at the top, the end of the source.
func (p *parser) parseList(top bool) (list []node, end string, err error) {
	for {
		i := strings.Index(p.src[p.pos:], "{{")
		if i < 0 {
			if !top {
				return nil, "", p.errorf("unexpected end of input: missing {{end}}")
			}
			list = appendText(list, p.src[p.pos:], p.line)
			p.pos = len(p.src)
			return list, "", nil
		}
		text := p.src[p.pos : p.pos+i]
		a, err := p.readAction(p.pos + i)
		if err != nil {
			return nil, "", err
		}
		if a.trimLeft {
			text = strings.TrimRight(text, " \t\r\n")
		}
		list = appendText(list, text, p.line)
		p.line += strings.Count(p.src[p.pos:p.pos+i], "\n")
		p.pos = p.skipAction(p.pos+i, a)
		if a.words == "" { // a comment
			continue
		}
		word, rest, _ := strings.Cut(a.words, " ")
		rest = strings.TrimSpace(rest)
		switch word {
		case "end", "else":
			return list, a.words, nil
		case "if", "range":
			n, err := p.parseControl(word, rest, a.line)
			if err != nil {
				return nil, "", err
			}
			list = append(list, n)
		case "define":
			name, err := p.stringArg(rest)
			if err != nil {
				return nil, "", err
			}
			body, end, err := p.parseList(false)
			if err != nil {
				return nil, "", err
			}
			if end != "end" {
				return nil, "", p.errorf("{{%s}} in {{define}}", end)
			}
			t := p.set.byName[name]
			if t == nil {
				t = &Template{name: name, set: p.set}
				p.set.byName[name] = t
			}
			t.root = body
			if t.root == nil {
				t.root = []node{}
			}
		case "template":
			nameWord, arg, _ := strings.Cut(rest, " ")
			name, err := p.stringArg(nameWord)
			if err != nil {
				return nil, "", err
			}
			n := node{kind: templateNode, line: a.line, text: name}
			if arg = strings.TrimSpace(arg); arg != "" {
				if n.pipe, err = p.parseExpr(arg); err != nil {
					return nil, "", err
				}
			}
			list = append(list, n)
		case "with", "block", "break", "continue":
			return nil, "", p.errorf("{{%s}} is not supported", word)
		default:
			e, err := p.parseExpr(a.words)
			if err != nil {
				return nil, "", err
			}
			list = append(list, node{kind: actionNode, line: a.line, pipe: e})
		}
	}
}

func appendText(list []node, text string, line int) []node {
	if text == "" {
		return list
	}
	return append(list, node{kind: textNode, line: line, text: text})
}

// parseControl parses the rest of an {{if}} or {{range}}: its body, any
// {{else}} or {{else if}} chain, and its {{end}}.
func (p *parser) parseControl(word, cond string, line int) (node, error) {
	kind := ifNode
	if word == "range" {
		kind = rangeNode
	}
	e, err := p.parseExpr(cond)
	if err != nil {
		return node{}, err
	}
	n := node{kind: kind, line: line, pipe: e}
	body, end, err := p.parseList(false)
	if err != nil {
		return node{}, err
	}
	n.list = body
	switch {
	case end == "end":
	case end == "else":
		if n.elseL, end, err = p.parseList(false); err != nil {
			return node{}, err
		}
		if end != "end" {
			return node{}, p.errorf("{{%s}} after {{else}}", end)
		}
	case strings.HasPrefix(end, "else if ") && kind == ifNode:
		// {{else if X}} … is {{else}}{{if X}} … {{end}}{{end}}, sharing one end
		inner, err := p.parseControl("if", strings.TrimSpace(end[len("else if "):]), p.line)
		if err != nil {
			return node{}, err
		}
		n.elseL = []node{inner}
	default:
		return node{}, p.errorf("unexpected {{%s}}", end)
	}
	return n, nil
}

// readAction reads the action that starts at i ("{{").
func (p *parser) readAction(i int) (action, error) {
	a := action{line: p.line + strings.Count(p.src[p.pos:i], "\n")}
	body := p.src[i+2:]
	if strings.HasPrefix(body, "- ") || strings.HasPrefix(body, "-\n") || strings.HasPrefix(body, "-\t") {
		a.trimLeft = true
		body = body[1:]
	}
	end := closeOf(body)
	if end < 0 {
		return a, p.errorf("unclosed action")
	}
	words := body[:end]
	if strings.HasSuffix(words, " -") || strings.HasSuffix(words, "\n-") || strings.HasSuffix(words, "\t-") {
		a.trimRight = true
		words = words[:len(words)-1]
	}
	words = strings.TrimSpace(words)
	if strings.HasPrefix(words, "/*") {
		if !strings.HasSuffix(words, "*/") {
			return a, p.errorf("unclosed comment")
		}
		words = ""
	}
	a.words = words
	return a, nil
}

// skipAction returns where the text after the action that starts at i
// begins, past any white space a -}} trims.
func (p *parser) skipAction(i int, a action) int {
	body := p.src[i+2:]
	if a.trimLeft {
		body = body[1:]
	}
	j := len(p.src) - len(body) + closeOf(body) + 2
	p.line += strings.Count(p.src[i:j], "\n")
	if a.trimRight {
		k := j
		for k < len(p.src) && strings.IndexByte(" \t\r\n", p.src[k]) >= 0 {
			k++
		}
		p.line += strings.Count(p.src[j:k], "\n")
		j = k
	}
	return j
}

// closeOf returns the index of the "}}" that closes an action whose words
// start s, skipping quoted strings.
func closeOf(s string) int {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '"':
			for i++; i < len(s) && s[i] != '"'; i++ {
				if s[i] == '\\' {
					i++
				}
			}
		case '`':
			j := strings.IndexByte(s[i+1:], '`')
			if j < 0 {
				return -1
			}
			i += j + 1
		case '}':
			if i+1 < len(s) && s[i+1] == '}' {
				return i
			}
		}
	}
	return -1
}

func (p *parser) stringArg(s string) (string, error) {
	e, err := p.parseExpr(s)
	if err != nil {
		return "", err
	}
	if e.kind != constExpr || e.val.Kind() != reflect.String {
		return "", p.errorf("want a quoted name, have %s", s)
	}
	return e.val.String(), nil
}

// parseExpr parses the words of an action: one operand, or a function and
// its arguments.
func (p *parser) parseExpr(s string) (*expr, error) {
	lx := &lexer{s: s}
	words, err := lx.words()
	if err != nil {
		return nil, p.errorf("%v in %q", err, s)
	}
	e, rest, err := p.command(words)
	if err != nil {
		return nil, err
	}
	if len(rest) > 0 {
		return nil, p.errorf("unexpected %q in %q", rest[0], s)
	}
	return e, nil
}

// command parses words up to the end or a ")": an operand alone, or a
// function name followed by its arguments.
func (p *parser) command(words []string) (*expr, []string, error) {
	if len(words) == 0 {
		return nil, nil, p.errorf("missing value")
	}
	if isIdent(words[0]) && words[0] != "true" && words[0] != "false" {
		name := words[0]
		if _, ok := builtins[name]; !ok {
			if _, ok := p.set.funcs[name]; !ok {
				return nil, nil, p.errorf("function %q not defined", name)
			}
		}
		e := &expr{kind: callExpr, fn: name}
		words = words[1:]
		for len(words) > 0 && words[0] != ")" {
			if words[0] == "|" {
				return nil, nil, p.errorf("pipelines (|) are not supported")
			}
			arg, rest, err := p.operand(words)
			if err != nil {
				return nil, nil, err
			}
			e.args = append(e.args, arg)
			words = rest
		}
		return e, words, nil
	}
	e, rest, err := p.operand(words)
	if err != nil {
		return nil, nil, err
	}
	if len(rest) > 0 && rest[0] != ")" {
		return nil, nil, p.errorf("%q is not a function", words[0])
	}
	return e, rest, nil
}

// operand parses one argument: a field chain, a literal or a parenthesized
// command, possibly followed by a field chain.
func (p *parser) operand(words []string) (*expr, []string, error) {
	w := words[0]
	switch {
	case w == "(":
		inner, rest, err := p.command(words[1:])
		if err != nil {
			return nil, nil, err
		}
		if len(rest) == 0 || rest[0] != ")" {
			return nil, nil, p.errorf("unclosed (")
		}
		rest = rest[1:]
		if len(rest) > 0 && strings.HasPrefix(rest[0], ".") && rest[0] != "." {
			return &expr{kind: subExpr, sub: inner, fields: strings.Split(rest[0][1:], ".")}, rest[1:], nil
		}
		return inner, rest, nil
	case w == ".":
		return &expr{kind: fieldExpr}, words[1:], nil
	case strings.HasPrefix(w, "."):
		fields := strings.Split(w[1:], ".")
		for _, f := range fields {
			if !isIdent(f) {
				return nil, nil, p.errorf("bad field name in %q", w)
			}
		}
		return &expr{kind: fieldExpr, fields: fields}, words[1:], nil
	case w == "true" || w == "false":
		return &expr{kind: constExpr, val: reflect.ValueOf(w == "true")}, words[1:], nil
	case w[0] == '"' || w[0] == '`':
		s, err := unquote(w)
		if err != nil {
			return nil, nil, p.errorf("bad string %s", w)
		}
		return &expr{kind: constExpr, val: reflect.ValueOf(s)}, words[1:], nil
	case w[0] == '-' || w[0] == '+' || w[0] >= '0' && w[0] <= '9':
		v, err := number(w)
		if err != nil {
			return nil, nil, p.errorf("bad number %s", w)
		}
		return &expr{kind: constExpr, val: v}, words[1:], nil
	case isIdent(w):
		return nil, nil, p.errorf("function %q in an argument needs parentheses", w)
	}
	return nil, nil, p.errorf("unexpected %q", w)
}

func isIdent(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if c != '_' && !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z') && (i == 0 || !(c >= '0' && c <= '9')) {
			return false
		}
	}
	return true
}

// ---- execute ----

type state struct {
	w    io.Writer
	set  *set
	name string
	line int
	err  error
	deep int
}

func (s *state) fail(err error) {
	if s.err == nil {
		s.err = fmt.Errorf("template: %s:%d: %w", s.name, s.line+1, err)
	}
}

func (s *state) walk(dot reflect.Value, list []node) {
	for i := range list {
		if s.err != nil {
			return
		}
		n := &list[i]
		s.line = n.line
		switch n.kind {
		case textNode:
			s.write(n.text)
		case actionNode:
			v, err := s.eval(dot, n.pipe)
			if err != nil {
				s.fail(err)
				return
			}
			s.print(v)
		case ifNode:
			v, err := s.eval(dot, n.pipe)
			if err != nil {
				s.fail(err)
				return
			}
			if truth(v) {
				s.walk(dot, n.list)
			} else {
				s.walk(dot, n.elseL)
			}
		case rangeNode:
			v, err := s.eval(dot, n.pipe)
			if err != nil {
				s.fail(err)
				return
			}
			s.rangeOver(dot, v, n)
		case templateNode:
			t := s.set.byName[n.text]
			if t == nil || t.root == nil {
				s.fail(fmt.Errorf("no such template %q", n.text))
				return
			}
			arg := reflect.Value{}
			if n.pipe != nil {
				v, err := s.eval(dot, n.pipe)
				if err != nil {
					s.fail(err)
					return
				}
				arg = v
			}
			if s.deep++; s.deep > 100 {
				s.fail(errors.New("templates nested too deeply"))
				return
			}
			name, line := s.name, s.line
			s.name = t.name
			s.walk(arg, t.root)
			s.name, s.line = name, line
			s.deep--
		}
	}
}

func (s *state) rangeOver(dot, v reflect.Value, n *node) {
	v = indirect(v)
	ran := false
	switch v.Kind() {
	case reflect.Slice, reflect.Array:
		for i := range v.Len() {
			ran = true
			s.walk(v.Index(i), n.list)
		}
	case reflect.Map:
		if v.Type().Key().Kind() != reflect.String {
			s.fail(fmt.Errorf("range over a map needs string keys, not %s", v.Type()))
			return
		}
		keys := v.MapKeys()
		sortStrings(keys)
		for _, k := range keys {
			ran = true
			s.walk(v.MapIndex(k), n.list)
		}
	case reflect.Invalid:
	default:
		s.fail(fmt.Errorf("range can't iterate over %s", v.Type()))
		return
	}
	if !ran {
		s.walk(dot, n.elseL)
	}
}

func sortStrings(keys []reflect.Value) {
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && keys[j].String() < keys[j-1].String(); j-- {
			keys[j], keys[j-1] = keys[j-1], keys[j]
		}
	}
}

func (s *state) write(text string) {
	if s.err != nil {
		return
	}
	if _, err := io.WriteString(s.w, text); err != nil {
		s.err = err
	}
}

// print writes a value as text/template does: through a pointer, with
// "<no value>" for nothing, fmt's form for the rest; escaped for HTML in an
// HTML template, unless the value is HTML.
func (s *state) print(v reflect.Value) {
	if v.Kind() == reflect.Pointer {
		v = indirect(v)
	}
	var text string
	switch {
	case !v.IsValid():
		text = "<no value>"
	case v.Type() == htmlType && s.set.html:
		s.write(v.String())
		return
	default:
		if !v.Type().Implements(errorType) && !v.Type().Implements(stringerType) && v.CanAddr() &&
			(reflect.PointerTo(v.Type()).Implements(errorType) || reflect.PointerTo(v.Type()).Implements(stringerType)) {
			v = v.Addr()
		}
		switch v.Kind() {
		case reflect.Chan, reflect.Func:
			s.fail(fmt.Errorf("can't print a value of type %s", v.Type()))
			return
		}
		text = fmt.Sprint(v.Interface())
	}
	if s.set.html {
		text = htmlEscaper.Replace(text)
	}
	s.write(text)
}

// eval evaluates an expression. As in text/template, a value held in an
// empty interface comes out as the value itself (nil as no value).
func (s *state) eval(dot reflect.Value, e *expr) (reflect.Value, error) {
	v, err := s.eval1(dot, e)
	if v.Kind() == reflect.Interface && v.Type().NumMethod() == 0 {
		v = reflect.ValueOf(v.Interface())
	}
	return v, err
}

func (s *state) eval1(dot reflect.Value, e *expr) (reflect.Value, error) {
	switch e.kind {
	case constExpr:
		return e.val, nil
	case fieldExpr:
		return s.fields(dot, e.fields)
	case subExpr:
		v, err := s.eval(dot, e.sub)
		if err != nil {
			return v, err
		}
		return s.fields(v, e.fields)
	}
	args := make([]reflect.Value, len(e.args))
	for i, a := range e.args {
		v, err := s.eval(dot, a)
		if err != nil {
			return v, err
		}
		args[i] = v
	}
	if b, ok := builtins[e.fn]; ok {
		return b(args)
	}
	return call(e.fn, s.set.funcs[e.fn], args)
}

// fields follows .A.B from v: struct fields and map keys, through pointers
// and interfaces.
func (s *state) fields(v reflect.Value, names []string) (reflect.Value, error) {
	for _, name := range names {
		if v.IsValid() && v.Kind() == reflect.Interface {
			v = v.Elem()
		}
		for v.IsValid() && v.Kind() == reflect.Pointer {
			if v.IsNil() {
				return reflect.Value{}, fmt.Errorf("nil pointer evaluating %s.%s", v.Type(), name)
			}
			v = v.Elem()
		}
		switch v.Kind() {
		case reflect.Struct:
			f, ok := v.Type().FieldByName(name)
			if !ok || !f.IsExported() {
				return reflect.Value{}, fmt.Errorf("can't evaluate field %s in type %s (methods are not called)", name, v.Type())
			}
			v = v.FieldByIndex(f.Index)
		case reflect.Map:
			if v.Type().Key().Kind() != reflect.String {
				return reflect.Value{}, fmt.Errorf("can't evaluate key %s in type %s", name, v.Type())
			}
			m := v.MapIndex(reflect.ValueOf(name).Convert(v.Type().Key()))
			if !m.IsValid() {
				if s.set.missingErr {
					return reflect.Value{}, fmt.Errorf("map has no entry for key %q", name)
				}
				// no value: it prints "<no value>", and a field of it is an error
			}
			v = m
		case reflect.Invalid:
			return reflect.Value{}, fmt.Errorf("nil data; no entry for key %q", name)
		default:
			return reflect.Value{}, fmt.Errorf("can't evaluate field %s in type %s", name, v.Type())
		}
	}
	return v, nil
}

func indirect(v reflect.Value) reflect.Value {
	for v.IsValid() && (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) {
		if v.IsNil() {
			return reflect.Value{}
		}
		v = v.Elem()
	}
	return v
}

// truth is text/template's: the zero value, an empty slice, map or string,
// and nil are false.
func truth(v reflect.Value) bool {
	if !v.IsValid() {
		return false
	}
	switch v.Kind() {
	case reflect.Array, reflect.Map, reflect.Slice, reflect.String:
		return v.Len() > 0
	case reflect.Bool:
		return v.Bool()
	case reflect.Complex64, reflect.Complex128:
		return v.Complex() != 0
	case reflect.Chan, reflect.Func, reflect.Pointer, reflect.Interface:
		return !v.IsNil()
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return v.Int() != 0
	case reflect.Float32, reflect.Float64:
		return v.Float() != 0
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return v.Uint() != 0
	}
	return true
}

var builtins map[string]func([]reflect.Value) (reflect.Value, error)

func init() {
	builtins = map[string]func([]reflect.Value) (reflect.Value, error){
		"eq": func(a []reflect.Value) (reflect.Value, error) {
			if len(a) < 2 {
				return reflect.Value{}, errors.New("eq needs two or more arguments")
			}
			for _, b := range a[1:] {
				eq, err := equal(a[0], b)
				if err != nil || eq {
					return reflect.ValueOf(eq), err
				}
			}
			return reflect.ValueOf(false), nil
		},
		"ne": func(a []reflect.Value) (reflect.Value, error) {
			if len(a) != 2 {
				return reflect.Value{}, errors.New("ne needs two arguments")
			}
			eq, err := equal(a[0], a[1])
			return reflect.ValueOf(!eq), err
		},
		"not": func(a []reflect.Value) (reflect.Value, error) {
			if len(a) != 1 {
				return reflect.Value{}, errors.New("not needs one argument")
			}
			return reflect.ValueOf(!truth(a[0])), nil
		},
		"print": func(a []reflect.Value) (reflect.Value, error) {
			args := make([]any, len(a))
			for i, v := range a {
				if v.IsValid() {
					args[i] = v.Interface()
				}
			}
			return reflect.ValueOf(fmt.Sprint(args...)), nil
		},
	}
}

// equal compares two values as text/template's eq does: numbers by value
// whatever their size, strings and bools by value, other comparable values
// with ==.
func equal(a, b reflect.Value) (bool, error) {
	a, b = indirectInterface(a), indirectInterface(b)
	if !a.IsValid() || !b.IsValid() {
		return !a.IsValid() && !b.IsValid(), nil
	}
	ka, kb := kindClass(a.Kind()), kindClass(b.Kind())
	switch {
	case ka == intKind && kb == intKind:
		return a.Int() == b.Int(), nil
	case ka == uintKind && kb == uintKind:
		return a.Uint() == b.Uint(), nil
	case ka == intKind && kb == uintKind:
		return a.Int() >= 0 && uint64(a.Int()) == b.Uint(), nil
	case ka == uintKind && kb == intKind:
		return b.Int() >= 0 && uint64(b.Int()) == a.Uint(), nil
	case ka != kb:
		return false, fmt.Errorf("incompatible types for comparison: %s and %s", a.Type(), b.Type())
	case ka == floatKind:
		return a.Float() == b.Float(), nil
	case ka == stringKind:
		return a.String() == b.String(), nil
	case ka == boolKind:
		return a.Bool() == b.Bool(), nil
	}
	if !a.Type().Comparable() || a.Type() != b.Type() {
		return false, fmt.Errorf("can't compare %s and %s", a.Type(), b.Type())
	}
	return a.Equal(b), nil
}

func indirectInterface(v reflect.Value) reflect.Value {
	for v.IsValid() && v.Kind() == reflect.Interface {
		v = v.Elem()
	}
	return v
}

type class int

const (
	otherKind class = iota
	intKind
	uintKind
	floatKind
	stringKind
	boolKind
)

func kindClass(k reflect.Kind) class {
	switch k {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return intKind
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64, reflect.Uintptr:
		return uintKind
	case reflect.Float32, reflect.Float64:
		return floatKind
	case reflect.String:
		return stringKind
	case reflect.Bool:
		return boolKind
	}
	return otherKind
}

// call calls a FuncMap function, converting each argument to its
// parameter's type where Go would (a constant to any numeric type, a
// value to an interface it implements).
func call(name string, fn reflect.Value, args []reflect.Value) (reflect.Value, error) {
	ft := fn.Type()
	n := ft.NumIn()
	if ft.IsVariadic() {
		if len(args) < n-1 {
			return reflect.Value{}, fmt.Errorf("%s: want at least %d arguments, have %d", name, n-1, len(args))
		}
	} else if len(args) != n {
		return reflect.Value{}, fmt.Errorf("%s: want %d arguments, have %d", name, n, len(args))
	}
	in := make([]reflect.Value, len(args))
	for i, a := range args {
		var pt reflect.Type
		if ft.IsVariadic() && i >= n-1 {
			pt = ft.In(n - 1).Elem()
		} else {
			pt = ft.In(i)
		}
		v, err := convert(a, pt)
		if err != nil {
			return reflect.Value{}, fmt.Errorf("%s: argument %d: %v", name, i+1, err)
		}
		in[i] = v
	}
	out := fn.Call(in)
	if len(out) == 2 && !out[1].IsNil() {
		return reflect.Value{}, fmt.Errorf("%s: %v", name, out[1].Interface())
	}
	return out[0], nil
}

func convert(v reflect.Value, t reflect.Type) (reflect.Value, error) {
	if !v.IsValid() {
		switch t.Kind() {
		case reflect.Chan, reflect.Func, reflect.Interface, reflect.Map, reflect.Pointer, reflect.Slice:
			return reflect.Zero(t), nil
		}
		return reflect.Value{}, fmt.Errorf("missing value for %s", t)
	}
	if v.Kind() == reflect.Interface && !v.IsNil() && t.Kind() != reflect.Interface {
		v = v.Elem()
	}
	if v.Type().AssignableTo(t) {
		return v, nil
	}
	from, to := kindClass(v.Kind()), kindClass(t.Kind())
	if from != otherKind && from == to || from == intKind && (to == uintKind && v.Int() >= 0 || to == floatKind) {
		return v.Convert(t), nil
	}
	return reflect.Value{}, fmt.Errorf("can't use %s as %s", v.Type(), t)
}
