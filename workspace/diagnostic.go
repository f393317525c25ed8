package workspace

import (
	"fmt"
	"strings"
)

// Severity says how bad a [Diagnostic] is. A warning means something was
// read leniently or left out; an error means a file could not be used at all.
type Severity int

const (
	Warning Severity = iota
	Error
)

func (s Severity) String() string {
	if s == Error {
		return "error"
	}
	return "warning"
}

// MarshalText makes a Severity encode as "warning" or "error" in JSON.
func (s Severity) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

// UnmarshalText reads "warning" or "error", so that a result read back
// from its JSON is the same result.
func (s *Severity) UnmarshalText(b []byte) error {
	switch string(b) {
	case "warning":
		*s = Warning
	case "error":
		*s = Error
	default:
		return fmt.Errorf("unknown severity %q (want warning or error)", b)
	}
	return nil
}

// Diagnostic is something loom had to say about the workspace while the
// render went on without it. An error, by contrast, means nothing usable came
// out.
type Diagnostic struct {
	Path     string   `json:"path"`     // workspace-relative, slash-separated; never absolute
	Line     int      `json:"line"`     // 0 when unknown
	Severity Severity `json:"severity"` // Warning or Error
	Code     string   `json:"code"`     // stable id, e.g. "read.outside"
	Message  string   `json:"message"`  // lowercase, no final period
}

// String formats d the way compilers do:
// "skills/pdf/SKILL.md:3: warning: description is too long". A path with
// control characters or quotes is quoted ([QuotePath]) and control
// characters in the message are escaped ([OneLine]), so one diagnostic is
// always one line.
func (d Diagnostic) String() string {
	var b strings.Builder
	if d.Path != "" {
		b.WriteString(QuotePath(d.Path))
		if d.Line > 0 {
			fmt.Fprintf(&b, ":%d", d.Line)
		}
		b.WriteString(": ")
	}
	b.WriteString(d.Severity.String())
	b.WriteString(": ")
	b.WriteString(OneLine(d.Message))
	return b.String()
}

// Diagnostics collects diagnostics in the order they were found.
type Diagnostics []Diagnostic

// Add appends a diagnostic.
func (ds *Diagnostics) Add(sev Severity, path string, line int, code, format string, args ...any) {
	*ds = append(*ds, Diagnostic{Path: path, Line: line, Severity: sev, Code: code, Message: fmt.Sprintf(format, args...)})
}

// HasErrors reports whether any diagnostic is an error.
func (ds Diagnostics) HasErrors() bool {
	for _, d := range ds {
		if d.Severity == Error {
			return true
		}
	}
	return false
}
