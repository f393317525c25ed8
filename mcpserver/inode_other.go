//go:build !unix

package mcpserver

import "io/fs"

func inode(fs.FileInfo) uint64 { return 0 }
