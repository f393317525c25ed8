//go:build !unix

package filelock

const openFlags = 0
