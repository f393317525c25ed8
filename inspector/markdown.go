package inspector

import (
	"strings"

	"github.com/loomctx/loom/internal/template"
)

// markdownHTML is a small Markdown preview: headings, fenced code, bullet
// and numbered lists, paragraphs, and inline code and bold. Every run of
// text is escaped, so workspace text can never add markup of its own.
func markdownHTML(src string) template.HTML {
	var b strings.Builder
	lines := strings.Split(src, "\n")
	var para []string
	list := ""
	flushPara := func() {
		if len(para) > 0 && strings.HasPrefix(strings.TrimSpace(para[0]), "<") {
			// XML-like blocks (a skills catalogue) keep their lines.
			b.WriteString("<pre class=\"xml\">")
			b.WriteString(template.HTMLEscapeString(strings.Join(para, "\n")))
			b.WriteString("</pre>\n")
			para = para[:0]
			return
		}
		if len(para) > 0 {
			b.WriteString("<p>")
			b.WriteString(inline(strings.Join(para, "\n")))
			b.WriteString("</p>\n")
			para = para[:0]
		}
	}
	closeList := func() {
		if list != "" {
			b.WriteString("</" + list + ">\n")
			list = ""
		}
	}
	for i := 0; i < len(lines); i++ {
		l := lines[i]
		t := strings.TrimSpace(l)
		switch {
		case strings.HasPrefix(t, "```"):
			flushPara()
			closeList()
			b.WriteString("<pre><code>")
			for i++; i < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[i]), "```"); i++ {
				b.WriteString(template.HTMLEscapeString(lines[i]))
				b.WriteByte('\n')
			}
			b.WriteString("</code></pre>\n")
		case t == "":
			flushPara()
			closeList()
		case heading(t) > 0:
			flushPara()
			closeList()
			n := heading(t)
			tag := "h" + string(rune('0'+min(n+2, 6)))
			b.WriteString("<" + tag + ">" + inline(strings.TrimSpace(t[n:])) + "</" + tag + ">\n")
		case strings.HasPrefix(t, "- ") || strings.HasPrefix(t, "* "):
			flushPara()
			if list != "ul" {
				closeList()
				b.WriteString("<ul>\n")
				list = "ul"
			}
			b.WriteString("<li>" + inline(t[2:]) + "</li>\n")
		case numbered(t) > 0:
			flushPara()
			if list != "ol" {
				closeList()
				b.WriteString("<ol>\n")
				list = "ol"
			}
			b.WriteString("<li>" + inline(strings.TrimSpace(t[numbered(t):])) + "</li>\n")
		default:
			closeList()
			para = append(para, l)
		}
	}
	flushPara()
	closeList()
	return template.HTML(b.String())
}

// heading returns the number of leading #s of an ATX heading, or 0.
func heading(t string) int {
	n := 0
	for n < len(t) && t[n] == '#' {
		n++
	}
	if n == 0 || n > 6 || n == len(t) || t[n] != ' ' {
		return 0
	}
	return n
}

// numbered returns the length of a "12. " marker, or 0.
func numbered(t string) int {
	n := 0
	for n < len(t) && t[n] >= '0' && t[n] <= '9' {
		n++
	}
	if n == 0 || n+1 >= len(t) || t[n] != '.' || t[n+1] != ' ' {
		return 0
	}
	return n + 2
}

// inline escapes s and renders `code` and **bold**.
func inline(s string) string {
	var b strings.Builder
	for len(s) > 0 {
		i := strings.IndexAny(s, "`*")
		if i < 0 {
			b.WriteString(template.HTMLEscapeString(s))
			break
		}
		b.WriteString(template.HTMLEscapeString(s[:i]))
		s = s[i:]
		if s[0] == '`' {
			if j := strings.IndexByte(s[1:], '`'); j >= 0 {
				b.WriteString("<code>" + template.HTMLEscapeString(s[1:1+j]) + "</code>")
				s = s[j+2:]
				continue
			}
		} else if strings.HasPrefix(s, "**") {
			if j := strings.Index(s[2:], "**"); j > 0 {
				b.WriteString("<strong>" + template.HTMLEscapeString(s[2:2+j]) + "</strong>")
				s = s[j+4:]
				continue
			}
		}
		b.WriteString(template.HTMLEscapeString(s[:1]))
		s = s[1:]
	}
	return b.String()
}
