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
