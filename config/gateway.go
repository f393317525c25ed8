package config

// GatewayConfig configures the OpenAI-compatible gateway (package gateway).
type GatewayConfig struct {
	// ClientSystem says what happens to the client's own system or
	// developer message: "append" (the default) puts it after loom's
	// prompt as its own section; "replace" keeps it instead of loom's
	// prompt, with loom adding only memory and the runtime context;
	// "ignore" drops it.
	ClientSystem string `yaml:"client_system"`
	// ForwardAuth forwards the client's Authorization header to the
	// upstream when loom has no key of its own for it. Nil means false.
	ForwardAuth *bool `yaml:"forward_auth"`
	// Models are settings per model, keyed by the model name a client
	// asks for.
	Models map[string]ModelEntry `yaml:"models"`
}

// ModelEntry is one gateway.models entry. Written as a plain string,
// "claude-sonnet-4-5: gpt-4.1", it is Model alone.
type ModelEntry struct {
	// Model is the upstream model the name stands for; "" keeps it.
	Model string `yaml:"model"`
	// ContextWindow and ReserveOutput override llm.context_window and
	// llm.reserve_output for this model; 0 keeps those.
	ContextWindow int `yaml:"context_window"`
	ReserveOutput int `yaml:"reserve_output"`
}

// Window returns the context window and the reply's reserve for a model,
// by the name the client asked for: its gateway.models entry's where set,
// else llm.context_window and llm.reserve_output. A window of 0 means
// loom.yaml does not say; the caller may ask fit.KnownWindow.
func (c *Config) Window(model string) (window, reserve int) {
	window, reserve = c.LLM.ContextWindow, c.LLM.ReserveOutput
	if e, ok := c.Gateway.Models[model]; ok {
		if e.ContextWindow > 0 {
			window = e.ContextWindow
		}
		if e.ReserveOutput > 0 {
			reserve = e.ReserveOutput
		}
	}
	return window, reserve
}

// Gateway client_system modes.
const (
	ClientSystemAppend  = "append"
	ClientSystemReplace = "replace"
	ClientSystemIgnore  = "ignore"
)

// ClientSystemMode returns client_system, "append" when unset.
func (g GatewayConfig) ClientSystemMode() string {
	if g.ClientSystem == "" {
		return ClientSystemAppend
	}
	return g.ClientSystem
}

// ForwardsAuth reports whether forward_auth is true.
func (g GatewayConfig) ForwardsAuth() bool { return g.ForwardAuth != nil && *g.ForwardAuth }

// UpstreamModel is the model a request for model goes to: its
// gateway.models entry's model when it names one (an entry that names
// none serves the model under its own name), else configured (llm.model),
// else model itself.
func (g GatewayConfig) UpstreamModel(model, configured string) string {
	if e, ok := g.Models[model]; ok {
		if e.Model != "" {
			return e.Model
		}
		return model
	}
	if configured != "" {
		return configured
	}
	return model
}
