package workspace

// DiskOps is how many file-system calls the door has made so far.
func DiskOps() int64 { return diskOps.Load() }
