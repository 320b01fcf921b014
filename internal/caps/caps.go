// Package caps holds what the sandbox's init needs to drop every Linux
// capability before the command starts (internal/sandbox does the system
// calls, between clone and execve): the secure bits it locks, and the
// highest capability the kernel knows, to empty the bounding set up to it.
// DropThread makes the same calls from Go, for stockade seal.
// The order is the kernel's: secure bits, the bounding set (so no later
// execve can regain a capability from a file), the ambient set, then
// inheritable, permitted and effective together.
package caps
