//go:build !unix

package session

const openFlags = 0
