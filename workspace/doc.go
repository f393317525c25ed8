// Package workspace is loom's only door to the agent's folder on disk.
//
// Every file loom reads or writes in a workspace goes through a [Workspace]:
// it resolves each path beneath the folder's root and refuses any whose real
// path leaves it (a "..", an absolute path, a symlink pointing out), any file
// over the size limit ([WithMaxFileSize]) and any binary file, each with a
// [RefusedError] naming the path and the reason. What it returns is text by
// one rule ([Normalize]): no byte-order mark, LF line ends, valid UTF-8, no
// control characters but tab and newline, with the repairs it made listed.
// Writes go through the same checks and are atomic: a temporary file in the
// same folder, synced and renamed over the target.
//
// Reads are cached by file identity ([FileID]: size, modification time,
// inode and device): a
// [Workspace.Load] of an unchanged file returns the same *[File], which the
// layers above use as a cache key. [Workspace.Watch] subscribes to the
// folder's change events, so that an unchanged read makes no system call at
// all; [Workspace.Generation] moves whenever any read saw a change, and
// [Workspace.Subscribe] feeds the names that changed to whoever follows them
// (the skills watcher, the server's live reload).
package workspace
