package gateway

import (
	"encoding/json"
	"net/http"
)

// apiError is an error in the shape OpenAI's API answers with, so an OpenAI
// client shows it as it would show OpenAI's own.
type apiError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    *string `json:"code"`
}

// writeError writes an OpenAI-style error body.
func writeError(w http.ResponseWriter, status int, typ, code, param, format string, args ...any) {
	e := apiError{Message: sprintf(format, args...), Type: typ}
	if param != "" {
		e.Param = &param
	}
	if code != "" {
		e.Code = &code
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	enc.Encode(map[string]apiError{"error": e})
}

func badRequest(w http.ResponseWriter, param, format string, args ...any) {
	writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_value", param, format, args...)
}
