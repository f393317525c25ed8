package protocol

import "net/http"

// Errors in each protocol's own shape, so a client shows them as it shows
// the provider's.

// OpenAIError is an error body as OpenAI's API writes it:
// {"error":{"message","type","param","code"}}. param and code are null
// when empty.
func OpenAIError(typ, code, param, message string) []byte {
	e := struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		Code    *string `json:"code"`
	}{Message: message, Type: typ}
	if param != "" {
		e.Param = &param
	}
	if code != "" {
		e.Code = &code
	}
	return marshal(map[string]any{"error": e})
}

// AnthropicError is an error body as the Messages API writes it:
// {"type":"error","error":{"type","message"}}.
func AnthropicError(typ, message string) []byte {
	return marshal(map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": message}})
}

// AnthropicErrorType is the Messages API's error type for an HTTP status.
func AnthropicErrorType(status int) string {
	switch status {
	case http.StatusBadRequest, http.StatusUnprocessableEntity, http.StatusMethodNotAllowed:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case 529:
		return "overloaded_error"
	}
	return "api_error"
}

// OpenAIErrorType is OpenAI's error type for an HTTP status.
func OpenAIErrorType(status int) string {
	switch {
	case status == http.StatusUnauthorized:
		return "authentication_error"
	case status == http.StatusForbidden:
		return "permission_error"
	case status == http.StatusNotFound:
		return "not_found_error"
	case status == http.StatusTooManyRequests:
		return "rate_limit_error"
	case status/100 == 4:
		return "invalid_request_error"
	}
	return "server_error"
}
