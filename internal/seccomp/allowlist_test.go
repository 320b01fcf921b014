package seccomp

import (
	"errors"
	"testing"
)

// TestAllowlist runs an allowlist's program in the interpreter: the names
// it lists run, every other call and every foreign architecture kills.
func TestAllowlist(t *testing.T) {
	names := []string{"read", "write", "exit_group", "execve", "access", "arch_prctl", "write"}
	for _, arch := range Arches() {
		p, err := Allowlist(names, arch)
		if err != nil {
			t.Fatal(err)
		}
		rows := []row{
			call("read", Allow), call("write", Allow), call("exit_group", Allow), call("execve", Allow),
			call("rt_sigreturn", Allow),
			call("openat", KillProcess), call("socket", KillProcess), call("mount", KillProcess),
			call("getpid", KillProcess), call("futex", KillProcess),
			{nr: 0, audit: 0x40000003, want: KillProcess}, // i386
		}
		if arch == AMD64 {
			rows = append(rows, call("access", Allow), call("arch_prctl", Allow), call("open", KillProcess))
		}
		prog, err := Compile(p, arch)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range rows {
			d, err := r.data(arch)
			if err != nil {
				t.Fatal(err)
			}
			if got, err := run(prog, d); err != nil || got != r.want {
				t.Errorf("%s = %v (%v), want %v", r.describe(arch), got, err, r.want)
			}
		}
	}
}

// TestAllowlistRejects: a name no architecture knows is an error naming
// it; a call one architecture lacks is left out on it, not refused.
func TestAllowlistRejects(t *testing.T) {
	_, err := Allowlist([]string{"read", "reed"}, AMD64)
	if !errors.Is(err, ErrUnknownSyscall) || err.Error() != `unknown system call "reed"` {
		t.Errorf("Allowlist(reed) = %v, want unknown system call \"reed\"", err)
	}
	p, err := Allowlist([]string{"arch_prctl"}, ARM64)
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Names(); len(got) != 1 || got[0] != "rt_sigreturn" {
		t.Errorf("arm64 allowlist of arch_prctl names %v, want only rt_sigreturn", got)
	}
	// Every name of both tables compiles into one filter the kernel accepts.
	var all []string
	for name := range amd64Numbers() {
		all = append(all, name)
	}
	for _, arch := range Arches() {
		p, err := Allowlist(all, arch)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Compile(p, arch); err != nil {
			t.Errorf("allowlist of every call on %v: %v", arch, err)
		}
	}
}
