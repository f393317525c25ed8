package inspector

import (
	"io/fs"
	"regexp"
	"strings"
	"testing"
)

// internal/template escapes what it prints for HTML text and quoted
// attribute values only; unlike html/template it does not know scripts,
// styles, URLs or unquoted attributes. TestTemplatesPrintOnlyInSafePlaces
// holds every page template to those two places, so a template edit that
// would print workspace text somewhere the escaping does not cover fails
// here instead of shipping an injection.
func TestTemplatesPrintOnlyInSafePlaces(t *testing.T) {
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil || len(names) == 0 {
		t.Fatalf("no page templates found (%v)", err)
	}
	for _, name := range names {
		src, err := fs.ReadFile(templateFS, name)
		if err != nil {
			t.Fatal(err)
		}
		for _, bad := range unsafeActions(string(src)) {
			t.Errorf("%s: %s", name, bad)
		}
	}
}

func TestUnsafeActionsFindsEveryUnsafePlace(t *testing.T) {
	for _, src := range []string{
		`<a href="{{.URL}}">x</a>`,
		`<img src='{{.URL}}'>`,
		`<div onclick="{{.JS}}">`,
		`<div style="{{.CSS}}">`,
		`<div class={{.Class}}>`,
		`<div {{.Attr}}>`,
		`<script>var x = "{{.X}}";</script>`,
		`<style>p { color: {{.C}} }</style>`,
		`<form action="{{.U}}">`,
	} {
		if len(unsafeActions(src)) == 0 {
			t.Errorf("%q: not reported", src)
		}
	}
	for _, src := range []string{
		`<p>{{.Text}}</p>`,
		`<div class="x {{.Status}}" data-name="{{.Name}}" title='{{.T}}'>`,
		`<option{{if .On}} selected{{end}}>`,
		`<input value="{{if .B}}{{.B}}{{end}}">`,
		`<script src="/a.js" defer></script>{{.After}}`,
	} {
		if bad := unsafeActions(src); len(bad) != 0 {
			t.Errorf("%q: reported %v", src, bad)
		}
	}
}

var (
	actionRE   = regexp.MustCompile(`\{\{-?\s*(.*?)\s*-?\}\}`)
	controlRE  = regexp.MustCompile(`^(if|else|end|range|with|define|template|/\*)\b`)
	unsafeAttr = regexp.MustCompile(`^(href|src|action|formaction|style|srcset|on[a-z]+)$`)
)

// unsafeActions lists each action of src that prints a value anywhere but
// HTML text or a quoted attribute that holds plain text. Actions that only
// choose (if, else, end, …) may sit anywhere.
func unsafeActions(src string) []string {
	var bad []string
	const (
		text = iota
		tag
		attrName
		quoted
		unquoted
		raw
	)
	state, quote, name, tagName, rawEnd := text, byte(0), "", "", ""
	for i := 0; i < len(src); i++ {
		if strings.HasPrefix(src[i:], "{{") {
			m := actionRE.FindStringSubmatchIndex(src[i:])
			if m == nil {
				return append(bad, "unclosed action")
			}
			body := src[i+m[2] : i+m[3]]
			if !controlRE.MatchString(body) {
				switch {
				case state == text:
				case state == quoted && !unsafeAttr.MatchString(strings.ToLower(name)):
				case state == raw:
					bad = append(bad, "{{"+body+"}} inside <"+tagName+">")
				default:
					bad = append(bad, "{{"+body+"}} in a tag, outside a quoted plain-text attribute ("+name+")")
				}
			}
			i += m[1] - 1
			continue
		}
		c := src[i]
		switch state {
		case text:
			if c == '<' && i+1 < len(src) && (isLetter(src[i+1]) || src[i+1] == '/') {
				j := i + 1
				for j < len(src) && (isLetter(src[j]) || src[j] == '/' || src[j] >= '0' && src[j] <= '9') {
					j++
				}
				tagName = strings.ToLower(src[i+1 : j])
				state, name = tag, ""
				i = j - 1
			}
		case tag:
			switch {
			case c == '>':
				state = text
				if tagName == "script" || tagName == "style" {
					state, rawEnd = raw, "</"+tagName
				}
			case isLetter(c) || c == '-':
				state, name = attrName, string(c)
			}
		case attrName:
			switch {
			case c == '=':
				if i+1 < len(src) && (src[i+1] == '"' || src[i+1] == '\'') {
					state, quote = quoted, src[i+1]
					i++
				} else {
					state = unquoted
				}
			case c == '>':
				i--
				state = tag
			case c == ' ' || c == '\t' || c == '\n':
				state = tag
			default:
				name += string(c)
			}
		case quoted:
			if c == quote {
				state = tag
			}
		case unquoted:
			if c == ' ' || c == '\t' || c == '\n' || c == '>' {
				i--
				state = tag
			}
		case raw:
			if strings.HasPrefix(strings.ToLower(src[i:]), rawEnd) {
				state = text
			}
		}
	}
	return bad
}

func isLetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }
