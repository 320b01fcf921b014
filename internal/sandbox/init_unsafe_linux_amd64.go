package sandbox

// cloneInit is in init_linux_amd64.s: clone(flags, stack), and in the child,
// on that stack, arch_prctl(ARCH_SET_FS, tls) unless tls is 0, then
// initEntry(p), which never returns.
func cloneInit(flags, stack uintptr, p *program, tls uintptr) (pid, errno uintptr)
