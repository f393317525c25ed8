//go:build race

package config

// The race detector changes what allocates; allocation checks skip under it.
func init() { raceEnabled = true }
