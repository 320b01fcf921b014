// Package beneath opens, creates, renames and removes files below a
// directory without ever following a symbolic link.
//
// Everything the sandboxed command can write (the workdir, a --rw tree, its
// sandbox HOME) may hold a symlink it planted in any path component, left
// there for the next time stockade touches that path on the host. A plain
// open, mkdir or rename follows such a link and lands wherever the agent
// chose: the user's ~/.aws, another repository's .git, a config file of the
// user's own unsandboxed tools. Here every path is resolved by the kernel
// from a directory descriptor with openat2(2) and
// RESOLVE_BENEATH|RESOLVE_NO_SYMLINKS|RESOLVE_NO_MAGICLINKS: a symlink in any
// component fails with ELOOP and a ".." that would leave the directory with
// EXDEV, at the moment of the call, so there is no window between a check
// and the use. The last component of a name that is removed, renamed or
// stat'ed is the link itself, never its target.
//
// The directory a Root is opened on is trusted: it is opened by its path
// (a path the user gave, or stockade's own state), and only what lies below
// it is treated as hostile.
package beneath
