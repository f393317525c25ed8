package config

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/loomctx/loom/internal/yamlsafe"
)

// Bounds of a loom.yaml, checked before parsing (size) and before
// decoding (entries of one list or mapping).
const (
	MaxSize    = 1 << 20
	MaxEntries = 10000
)

// Parse decodes and checks the text of a loom.yaml; name is used in
// error messages. Keys it does not set keep their defaults, and Preset
// stays "" when not given. Time and memory are linear in len(data)
// (BenchmarkParse), and every error is a one-line *Error with a line.
func Parse(name string, data []byte) (*Config, error) {
	cfg := Default()
	cfg.File = name
	cfg.lines = make(map[string]int, min(bytes.Count(data, []byte(":"))+bytes.Count(data, []byte("\n")), 4*MaxEntries)) // sized once: no regrowth
	if len(data) > MaxSize {
		return nil, &Error{File: name, Msg: fmt.Sprintf("file is too large (%d bytes; the limit is %d, whatever max_file_size allows other files)", len(data), MaxSize)}
	}
	body, err := yamlsafe.Parse(data, yamlsafe.Limits{MaxBytes: MaxSize})
	if err != nil {
		var ye *yamlsafe.Error
		if errors.As(err, &ye) {
			return nil, &Error{File: name, Line: ye.Line, Msg: ye.Msg}
		}
		return nil, &Error{File: name, Msg: err.Error()}
	}
	if body == nil { // empty or only comments
		return cfg, nil
	}
	raw := &Config{File: name, lines: cfg.lines}
	d := decoder{file: name, lines: cfg.lines, budget: 4 * (len(data) + 64)}
	if b := d.target(body); b.Kind != yaml.MappingNode || !d.standardTag(b) {
		return nil, &Error{File: name, Line: body.Line, Msg: fmt.Sprintf("expected a mapping of settings, got %s", describe(body))}
	}
	if err := d.decode(body, "", reflect.ValueOf(raw).Elem()); err != nil {
		return nil, err
	}
	raw.fillDefaults(cfg)
	if err := raw.validate(); err != nil {
		return nil, err
	}
	return raw, nil
}

// decoder fills a Config from a node tree by its yaml tags. It is loom's
// own so that its messages speak loom.yaml (key path, line, what was
// expected) and so that it never panics on a node it does not expect.
type decoder struct {
	file   string
	lines  map[string]int
	budget int // nodes left to visit: aliases cannot blow up the work
}

var (
	durationType   = reflect.TypeFor[Duration]()
	modelEntryType = reflect.TypeFor[ModelEntry]()
)

func (d *decoder) errAt(key string, n *yaml.Node, format string, args ...any) error {
	line := n.Line
	if l, ok := d.lines[key]; ok && key != "" {
		line = l
	}
	msg := fmt.Sprintf(format, args...)
	if key != "" {
		msg = key + ": " + msg
	}
	return &Error{File: d.file, Line: line, Msg: msg}
}

// target follows aliases to the node they stand for.
func (d *decoder) target(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 100; i++ {
		n = n.Alias
	}
	return n
}

var knownTags = map[string]bool{"!!str": true, "!!int": true, "!!float": true, "!!bool": true, "!!null": true, "!!map": true, "!!seq": true}

func (d *decoder) standardTag(n *yaml.Node) bool { return knownTags[n.ShortTag()] }

func (d *decoder) decode(n *yaml.Node, key string, v reflect.Value) error {
	n = d.target(n)
	if n == nil || n.Kind == yaml.AliasNode {
		return d.errAt(key, &yaml.Node{}, "alias chain too long")
	}
	if d.budget--; d.budget < 0 {
		return d.errAt(key, n, "aliases expand to too much data")
	}
	if !d.standardTag(n) {
		return d.errAt(key, n, "unknown tag %q", n.Tag)
	}
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null" {
		return nil // "key:" with no value leaves the field unset
	}
	t := v.Type()
	if t == durationType {
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
			return d.errAt(key, n, "expected a duration such as \"300ms\", got %s", describe(n))
		}
		dur, err := time.ParseDuration(n.Value)
		if err != nil {
			return d.errAt(key, n, "invalid duration %q (write it like \"300ms\" or \"2s\")", n.Value)
		}
		if dur < 0 {
			return d.errAt(key, n, "duration %q is negative", n.Value)
		}
		v.SetInt(int64(dur))
		return nil
	}
	if t == modelEntryType && n.Kind == yaml.ScalarNode {
		// "alias: upstream-model", short for {model: upstream-model}
		d.lines[key+".model"] = n.Line
		return d.decode(n, key+".model", v.FieldByName("Model"))
	}
	switch t.Kind() {
	case reflect.Pointer:
		p := reflect.New(t.Elem())
		if err := d.decode(n, key, p.Elem()); err != nil {
			return err
		}
		v.Set(p)
	case reflect.String:
		if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!str" && n.ShortTag() != "!!int" && n.ShortTag() != "!!float") {
			return d.errAt(key, n, "expected a string, got %s", describe(n))
		}
		v.SetString(n.Value)
	case reflect.Int, reflect.Int64:
		if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!float" {
			if !strings.ContainsAny(n.Value, ".eEn") { // digits only: too big for an int
				return d.errAt(key, n, "%s is out of range", n.Value)
			}
			return d.errAt(key, n, "expected a whole number, got %s", n.Value)
		}
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
			return d.errAt(key, n, "expected a whole number, got %s", describe(n))
		}
		i, err := strconv.ParseInt(n.Value, 0, 64)
		if err != nil {
			err = n.Decode(&i) // YAML spellings Go's syntax lacks
		}
		if err != nil || v.OverflowInt(i) {
			return d.errAt(key, n, "%s is out of range", n.Value)
		}
		v.SetInt(i)
	case reflect.Bool:
		var b bool
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" || n.Decode(&b) != nil {
			return d.errAt(key, n, "expected true or false, got %s", describe(n))
		}
		v.SetBool(b)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			return d.errAt(key, n, "expected a list, got %s", describe(n))
		}
		if len(n.Content) > MaxEntries {
			return d.errAt(key, n, "more than %d entries", MaxEntries)
		}
		s := reflect.MakeSlice(t, len(n.Content), len(n.Content))
		for i, item := range n.Content {
			k := indexKey(key, i)
			d.lines[k] = item.Line
			if err := d.decode(item, k, s.Index(i)); err != nil {
				return err
			}
		}
		v.Set(s)
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			return d.errAt(key, n, "expected a mapping, got %s", describe(n))
		}
		if len(n.Content)/2 > MaxEntries {
			return d.errAt(key, n, "more than %d entries", MaxEntries)
		}
		m := reflect.MakeMapWithSize(t, len(n.Content)/2)
		err := d.mapping(n, key, func(name, k string, kn, vn *yaml.Node) error {
			e := reflect.New(t.Elem()).Elem()
			if err := d.decode(vn, k, e); err != nil {
				return err
			}
			m.SetMapIndex(reflect.ValueOf(name), e)
			return nil
		})
		if err != nil {
			return err
		}
		v.Set(m)
	case reflect.Struct:
		if n.Kind != yaml.MappingNode {
			return d.errAt(key, n, "expected a mapping, got %s", describe(n))
		}
		fields := fieldsOf(t)
		return d.mapping(n, key, func(name, k string, kn, vn *yaml.Node) error {
			i, ok := fields[name]
			if !ok {
				return &Error{File: d.file, Line: kn.Line, Msg: fmt.Sprintf("unknown field %q", name)}
			}
			return d.decode(vn, k, v.Field(i))
		})
	default:
		return d.errAt(key, n, "cannot be set in loom.yaml")
	}
	return nil
}

// mapping calls f for each key of n in order, with its dotted path, after
// recording the key's line; a key given twice is an error.
func (d *decoder) mapping(n *yaml.Node, key string, f func(name, k string, kn, vn *yaml.Node) error) error {
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, vn := d.target(n.Content[i]), n.Content[i+1]
		if kn == nil || kn.Kind != yaml.ScalarNode || kn.ShortTag() == "!!null" {
			return d.errAt(key, n.Content[i], "a key must be a name, got %s", describe(n.Content[i]))
		}
		if kn.ShortTag() == "!!merge" {
			return &Error{File: d.file, Line: kn.Line, Msg: "merge keys (<<) are not supported"}
		}
		name := kn.Value
		k := name
		if key != "" {
			k = key + "." + name
		}
		if first, dup := d.lines[k]; dup { // paths are unique: only a repeated key meets its own
			return &Error{File: d.file, Line: kn.Line, Msg: fmt.Sprintf("%s: set twice (first on line %d)", k, first)}
		}
		d.lines[k] = kn.Line
		if err := f(name, k, kn, vn); err != nil {
			return err
		}
	}
	return nil
}

// fieldsOf maps yaml names to field indexes.
func fieldsOf(t reflect.Type) map[string]int {
	m := map[string]int{}
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if !f.IsExported() || name == "-" || name == "" {
			continue
		}
		m[name] = i
	}
	return m
}

// describe names the kind of a YAML node for a message.
func describe(n *yaml.Node) string {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		n = n.Alias
	}
	if !knownTags[n.ShortTag()] {
		return "a value tagged " + strconv.Quote(n.Tag)
	}
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	}
	switch n.ShortTag() {
	case "!!int", "!!float":
		return "a number"
	case "!!bool":
		return "true or false"
	case "!!null":
		return "nothing"
	case "!!str":
		return "a string"
	}
	return "a value tagged " + strconv.Quote(n.Tag)
}
