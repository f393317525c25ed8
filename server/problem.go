package server

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"strconv"
	"strings"

	"github.com/loomctx/loom/internal/jsonscan"
	"github.com/loomctx/loom/memory"
)

// Problem is an RFC 9457 problem: the body of every error response, sent as
// application/problem+json. Code is stable and meant for programs; Detail is
// for people and may change.
type Problem struct {
	Type   string `json:"type"`
	Title  string `json:"title"`
	Status int    `json:"status"`
	Detail string `json:"detail,omitempty"`
	Code   string `json:"code"`
	// Field names the request field at fault, as a JSON path ("report.budget").
	Field     string `json:"field,omitempty"`
	Instance  string `json:"instance,omitempty"`
	RequestID string `json:"request_id,omitempty"`
}

func (p *Problem) Error() string {
	if p.Field != "" {
		return fmt.Sprintf("%s: %s", p.Field, p.Detail)
	}
	return p.Detail
}

// Errorf returns a problem with the given status and stable code.
func Errorf(status int, code, format string, args ...any) *Problem {
	return &Problem{Status: status, Code: code, Detail: fmt.Sprintf(format, args...)}
}

// FieldErrorf returns a 400 problem naming the request field at fault.
func FieldErrorf(field, format string, args ...any) *Problem {
	return &Problem{Status: http.StatusBadRequest, Code: "invalid_field", Field: field, Detail: fmt.Sprintf(format, args...)}
}

// Stable problem codes.
const (
	CodeNotFound         = "not_found"
	CodeWorkspaceUnknown = "workspace_not_found"
	CodeBadJSON          = "invalid_json"
	CodeInvalidField     = "invalid_field"
	CodeUnknownField     = "unknown_field"
	CodeTooLarge         = "body_too_large"
	CodeUnauthorized     = "unauthorized"
	CodeInternal         = "internal"
	CodeUnsupportedMedia = "unsupported_media_type"
	CodeUnavailable      = "unavailable"
	CodeHostNotAllowed   = "host_not_allowed"
	CodeCrossOrigin      = "cross_origin_refused"
	CodeFormToken        = "form_token_invalid"
)

// WriteProblem writes err as a problem response. An error that is not a
// *Problem becomes a 500 whose detail does not repeat the error's text
// (which may hold a path or a secret); the caller logs it.
func WriteProblem(w http.ResponseWriter, r *http.Request, err error) {
	var p *Problem
	if !errors.As(err, &p) {
		var mb *http.MaxBytesError
		if errors.Is(err, memory.ErrUnavailable) {
			p = storeProblem(err).(*Problem)
		} else if errors.As(err, &mb) {
			p = Errorf(http.StatusRequestEntityTooLarge, CodeTooLarge, "request body larger than %d bytes", mb.Limit)
		} else {
			p = Errorf(http.StatusInternalServerError, CodeInternal, "internal error; see the server log for request %s", requestID(r))
		}
	}
	out := *p
	if out.Type == "" {
		out.Type = "https://loom.dev/problems/" + strings.ReplaceAll(out.Code, "_", "-")
	}
	if out.Title == "" {
		out.Title = http.StatusText(out.Status)
	}
	if r != nil {
		out.Instance = r.URL.Path
		out.RequestID = requestID(r)
	}
	h := w.Header()
	h.Set("Content-Type", "application/problem+json")
	h.Del("ETag")
	if out.Code == CodeStoreUnavailable && h.Get("Retry-After") == "" {
		h.Set("Retry-After", "1")
	}
	if out.Status == http.StatusUnauthorized {
		h.Set("WWW-Authenticate", `Bearer realm="loom"`)
	}
	w.WriteHeader(out.Status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(&out)
}

// DecodeJSON decodes a JSON request body into v. Unknown fields, trailing
// data, a wrong type, a body over the server's cap and a wrong content type
// all give a *Problem that names what was wrong (and the field, when there
// is one).
func DecodeJSON(r *http.Request, v any) error {
	if err := checkJSONType(r); err != nil {
		return err
	}
	body, err := readBody(r)
	if err != nil {
		return decodeProblem(err)
	}
	return decodeBody(body, v)
}

// decodeBody is decodeFrom for a body already read. A large body is
// checked on its skeleton (jsonscan.Skeleton: long strings emptied) by
// decodeFrom, for the same errors, then decoded in place by
// json.Unmarshal. decodeFrom alone first copies the body into its
// decoder's buffer, grown by doubling: with the string's own copy, a turn
// of one 16 MiB message allocated 5 times the body; this takes about 2.
// TestDecodeBodyAgrees holds the two ways to the same values and errors.
func decodeBody(body []byte, v any) error {
	if len(body) < minSkeletonBody || !json.Valid(body) {
		return decodeFrom(bytes.NewReader(body), v)
	}
	skel := jsonscan.Skeleton(body, minSkeletonString)
	if len(skel) > len(body)/2 {
		// Mostly structure, not text: the skeleton would save little.
		return decodeFrom(bytes.NewReader(body), v)
	}
	t := reflect.TypeOf(v)
	if t.Kind() != reflect.Pointer {
		return decodeFrom(bytes.NewReader(body), v)
	}
	if decodeFrom(bytes.NewReader(skel), reflect.New(t.Elem()).Interface()) != nil {
		// The error as the whole body gives it (an emptied string may
		// fail differently): a refused request's cost does not matter.
		return decodeFrom(bytes.NewReader(body), v)
	}
	if err := json.Unmarshal(body, v); err != nil {
		return decodeProblem(err)
	}
	return nil
}

// Bodies from minSkeletonBody bytes are decoded through their skeleton,
// which empties strings of minSkeletonString bytes or more.
const (
	minSkeletonBody   = 64 << 10
	minSkeletonString = 256
)

// checkJSONType refuses a request whose Content-Type is set and not JSON.
func checkJSONType(r *http.Request) error {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt := strings.TrimSpace(strings.ToLower(strings.SplitN(ct, ";", 2)[0]))
		if mt != "application/json" && !strings.HasSuffix(mt, "+json") {
			return Errorf(http.StatusUnsupportedMediaType, CodeUnsupportedMedia, "request body must be application/json, not %q", mt)
		}
	}
	return nil
}

// readBody reads a request body into one buffer of the size its
// Content-Length gives, when it gives one: io.ReadAll's doubling
// allocated about twice the body on the way (the server's cap on bodies
// still applies through the reader).
func readBody(r *http.Request) ([]byte, error) {
	if r.ContentLength <= 0 {
		return io.ReadAll(r.Body)
	}
	buf := make([]byte, r.ContentLength)
	n, err := io.ReadFull(r.Body, buf)
	if err == io.ErrUnexpectedEOF {
		err = nil // a shorter body than announced: what came
	}
	if err == nil {
		// Anything past the announced length is read, so the cap and a
		// trailing value are still seen.
		var more []byte
		if more, err = io.ReadAll(r.Body); len(more) > 0 {
			return append(buf[:n], more...), err
		}
	}
	return buf[:n], err
}

// decodeFrom decodes one JSON value from rd into v, refusing unknown
// fields and anything after the value, as DecodeJSON does.
func decodeFrom(rd io.Reader, v any) error {
	dec := json.NewDecoder(rd)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return decodeProblem(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return decodeProblem(err)
		}
		return Errorf(http.StatusBadRequest, CodeBadJSON, "request body holds more than one JSON value")
	}
	return nil
}

func decodeProblem(err error) error {
	var (
		mb  *http.MaxBytesError
		syn *json.SyntaxError
		typ *json.UnmarshalTypeError
	)
	switch {
	case errors.As(err, &mb):
		return Errorf(http.StatusRequestEntityTooLarge, CodeTooLarge, "request body larger than %d bytes", mb.Limit)
	case errors.Is(err, io.EOF):
		return Errorf(http.StatusBadRequest, CodeBadJSON, "request body is empty; send a JSON object")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return Errorf(http.StatusBadRequest, CodeBadJSON, "request body ends in the middle of a JSON value")
	case errors.As(err, &syn):
		return Errorf(http.StatusBadRequest, CodeBadJSON, "request body is not valid JSON at byte %d: %v", syn.Offset, syn)
	case errors.As(err, &typ):
		field := jsonField(typ.Field)
		if field == "" {
			return Errorf(http.StatusBadRequest, CodeBadJSON, "request body must be a JSON object, not %s", typ.Value)
		}
		return &Problem{Status: http.StatusBadRequest, Code: CodeInvalidField, Field: field,
			Detail: fmt.Sprintf("must be %s, not %s", jsonKind(typ.Type.Kind().String()), typ.Value)}
	case strings.HasPrefix(err.Error(), "json: unknown field "):
		name := strings.Trim(strings.TrimPrefix(err.Error(), "json: unknown field "), `"`)
		return &Problem{Status: http.StatusBadRequest, Code: CodeUnknownField, Field: name,
			Detail: fmt.Sprintf("unknown field %q", name)}
	}
	var p *Problem
	if errors.As(err, &p) {
		return p
	}
	return Errorf(http.StatusBadRequest, CodeBadJSON, "request body: %v", err)
}

// jsonField drops the Go names of embedded structs from a decoder's field
// path ("RenderRequest.budget" → "budget"): JSON names are snake_case.
func jsonField(f string) string {
	parts := strings.Split(f, ".")
	for len(parts) > 1 && parts[0] != "" && parts[0][0] >= 'A' && parts[0][0] <= 'Z' {
		parts = parts[1:]
	}
	return strings.Join(parts, ".")
}

func jsonKind(goKind string) string {
	switch goKind {
	case "string":
		return "a string"
	case "bool":
		return "a boolean"
	case "slice", "array":
		return "an array"
	case "struct", "map", "ptr":
		return "an object"
	case "int", "int8", "int16", "int32", "int64", "uint", "uint8", "uint16", "uint32", "uint64":
		return "an integer"
	case "float32", "float64":
		return "a number"
	}
	return "a " + goKind
}

// WriteJSON writes v as a JSON response with the given status: compact,
// with <, > and & left as they are, and a final newline.
func WriteJSON(w http.ResponseWriter, status int, v any) {
	body, err := marshal(v)
	if err != nil {
		WriteProblem(w, nil, err)
		return
	}
	writeBody(w, status, body)
}

func writeBody(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	w.Write(body)
}

func marshal(v any) ([]byte, error) {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return []byte(b.String()), nil
}
