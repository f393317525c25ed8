// Package jsonout is loom's one JSON exporter: every command's --json
// output, and the HTTP API's bodies, go through it so that they agree.
//
// The rules: keys are snake_case (each type's json tags say so; the
// package's tests check the commands' shapes); <, > and & are written as
// they are, not as \u003c; output is indented by two spaces and ends in a
// newline, or is one compact line per value for JSON Lines; diagnostics
// have one shape, workspace.Diagnostic: path, line, code, severity,
// message. Every result type must decode from its own output and encode to
// the same bytes again ([RoundTrip]).
package jsonout

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
)

// Marshal encodes v indented by two spaces, without HTML escaping, with a
// final newline.
func Marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Write writes Marshal(v) to w.
func Write(w io.Writer, v any) error {
	b, err := Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// Line encodes v as one compact line with a final newline, without HTML
// escaping: one record of JSON Lines.
func Line(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WriteLine writes Line(v) to w.
func WriteLine(w io.Writer, v any) error {
	b, err := Line(v)
	if err != nil {
		return err
	}
	_, err = w.Write(b)
	return err
}

// RoundTrip decodes data (output of Marshal or Line) into a fresh T,
// encodes it the same way and reports whether the bytes are equal: the
// check that a type's JSON loses nothing and carries nothing it cannot
// read back.
func RoundTrip[T any](data []byte) error {
	var v T
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&v); err != nil {
		return fmt.Errorf("decode %s: %w", reflect.TypeFor[T](), err)
	}
	enc := Marshal
	if !bytes.Contains(bytes.TrimSpace(data), []byte("\n")) {
		enc = Line
	}
	again, err := enc(v)
	if err != nil {
		return fmt.Errorf("encode %s: %w", reflect.TypeFor[T](), err)
	}
	if !bytes.Equal(again, data) {
		return fmt.Errorf("%s does not round-trip:\n got: %s\nwant: %s", reflect.TypeFor[T](), again, data)
	}
	return nil
}
