package workspace

// WithoutOpenat2 makes the door walk component by component, as on a
// kernel without openat2, until the returned func is called.
func WithoutOpenat2() (restore func()) {
	old := noOpenat2.Swap(true)
	return func() { noOpenat2.Store(old) }
}
