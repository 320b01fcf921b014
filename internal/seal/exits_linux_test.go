package seal

import (
	"github.com/stockade-dev/stockade/internal/testenv"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

// TestDenials: what the policy does not grant fails, and the command keeps
// no capability and no descriptor seal was given.
func TestDenials(t *testing.T) {
	testenv.StaticOnly(t, "it runs the test binary under a policy that lets only that binary execute, a static one")
	bin, _ := filepath.Abs(os.Args[0])
	r := runSeal(t, sealRun{policy: basePolicy(""), mode: 0o600, extra: true, args: []string{bin,
		"fd:3", "fd:9",
		"write:@WORK@/file", "read:@WORK@/file", "write:@WORK@/new",
		"read:/etc/hostname", "write:/tmp/seal-outside",
		"read:@WORK@/secret/key", "write:@WORK@/secret/new",
		"status"}})
	want := []string{
		"EBADF", "EBADF", // the policy file's descriptor and an inherited one
		"ok", "ok", // inside the readwrite allow
		"EACCES",           // a new entry in a directory split around a deny
		"EACCES", "EACCES", // outside every allow
		"EACCES", "EACCES", // the deny inside the allow wins
		"CapInh: 0000000000000000", "CapPrm: 0000000000000000", "CapEff: 0000000000000000",
	}
	got := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if r.code != 0 || len(got) < len(want) {
		t.Fatalf("exit %d signal %v\nstdout %s\nstderr %s", r.code, r.signal, r.stdout, r.stderr)
	}
	for i, w := range want {
		if got[i] != w {
			t.Errorf("line %d: got %q, want %q", i, got[i], w)
		}
	}
	if !strings.Contains(r.stdout, "NoNewPrivs: 1") || !strings.Contains(r.stdout, "CapAmb: 0000000000000000") {
		t.Errorf("no_new_privs or ambient capabilities: %s", r.stdout)
	}
	if os.Geteuid() == 0 && !strings.Contains(r.stdout, "CapBnd: 0000000000000000") {
		t.Errorf("root keeps a bounding set: %s", r.stdout)
	}
}

// TestAllowlistKills: under defaultDeny, a call the list leaves out kills
// the command with SIGSYS; the same command with the call listed runs.
func TestAllowlistKills(t *testing.T) {
	testenv.StaticOnly(t, "it runs the test binary under a policy that lets only that binary execute, a static one")
	bin, _ := filepath.Abs(os.Args[0])
	r := runSeal(t, sealRun{policy: basePolicy(allBut(t, "getppid")), mode: 0o600, args: []string{bin, "read:@WORK@/file", "getppid"}})
	if r.signal != syscall.SIGSYS || r.stdout != "ok\n" {
		t.Errorf("getppid left out: exit %d signal %v, stdout %q (want SIGSYS after one ok)\n%s", r.code, r.signal, r.stdout, r.stderr)
	}
	r = runSeal(t, sealRun{policy: basePolicy(allBut(t, "")), mode: 0o600, args: []string{bin, "getppid"}})
	if r.code != 0 || r.signal != 0 || r.stdout != "ok\n" {
		t.Errorf("getppid listed: exit %d signal %v, stdout %q\n%s", r.code, r.signal, r.stdout, r.stderr)
	}
}

// TestSafeClawExample runs the policy of SafeClaw's helper documentation,
// its default list of 27 system calls included, over a command that makes
// only calls of that list; and over one that also asks for its parent's
// pid, which the list leaves out.
func TestSafeClawExample(t *testing.T) {
	if runtime.GOARCH != "amd64" {
		t.Skip("the tiny command is x86_64 code")
	}
	policy, err := os.ReadFile("testdata/helper-example.json")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	for _, tt := range []struct {
		name   string
		nrs    []uint32
		stdout string
		signal syscall.Signal
	}{
		{"listed calls", []uint32{39 /* getpid */, 63 /* uname */}, "ok\n", 0},
		{"getppid", []uint32{39, 110 /* getppid */}, "", syscall.SIGSYS},
	} {
		t.Run(tt.name, func(t *testing.T) {
			prog := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-"))
			if err := os.WriteFile(prog, tinyELF(tt.nrs...), 0o755); err != nil {
				t.Fatal(err)
			}
			// @BIN@, the execute entry, is the test binary's directory;
			// the tiny command goes in the work directory's place.
			p := strings.ReplaceAll(string(policy), `"@WORK@", "access": "readwrite"`, `"`+dir+`", "access": "execute"`)
			r := runSeal(t, sealRun{policy: p, mode: 0o600, args: []string{prog}})
			if r.stdout != tt.stdout || r.signal != tt.signal {
				t.Errorf("stdout %q signal %v (exit %d), want %q and %v\n%s", r.stdout, r.signal, r.code, tt.stdout, tt.signal, r.stderr)
			}
		})
	}
}

// TestExitCodes provokes each of seal's own exit statuses. 73 and 76 need
// root: only root can lock a secure bit seal wants or take a second uid.
// 75 is provoked by a policy file others can write (no_new_privs itself
// cannot be refused).
func TestExitCodes(t *testing.T) {
	testenv.StaticOnly(t, "it runs the test binary under a policy that lets only that binary execute, a static one")
	bin, _ := filepath.Abs(os.Args[0])
	ok := basePolicy("")
	tests := []struct {
		name   string
		run    sealRun
		code   int
		stderr string
		root   bool
	}{
		{"bad JSON", sealRun{policy: `{"filesystem": {`, mode: 0o600}, ExitPolicy, "parsing the policy", false},
		{"unknown field", sealRun{policy: `{"filesystem": {"alow": []}}`, mode: 0o600}, ExitPolicy, `unknown field "alow"`, false},
		{"no filesystem", sealRun{policy: `{"syscalls": {"allow": [], "defaultDeny": true}}`, mode: 0o600}, ExitPolicy, `no "filesystem" section`, false},
		{"bad access", sealRun{policy: `{"filesystem": {"allow": [{"path": "/usr", "access": "rwx"}]}}`, mode: 0o600}, ExitPolicy, `access "rwx"`, false},
		{"unknown syscall", sealRun{policy: basePolicy(`{"allow": ["read", "reed"], "defaultDeny": true}`), mode: 0o600}, ExitPolicy, `unknown system call "reed"`, false},
		{"refused by default", sealRun{policy: basePolicy(`{"allow": ["mount"]}`), mode: 0o600}, ExitPolicy, `"mount"`, false},
		{"policy on fd 3", sealRun{policy: `nope`}, ExitPolicy, "parsing the policy", false},
		{"missing path", sealRun{policy: `{"filesystem": {"allow": [{"path": "/nonexistent/x", "access": "read"}]}}`, mode: 0o600}, ExitLandlock, "/nonexistent/x", false},
		{"filter does not fit", sealRun{policy: ok, mode: 0o600, pre: "filters"}, ExitSeccomp, "seccomp", false},
		{"secure bits locked", sealRun{policy: ok, mode: 0o600, pre: "securebits"}, ExitCaps, "secure bits", true},
		{"missing command", sealRun{policy: ok, mode: 0o600, args: []string{"/nonexistent/cmd"}}, ExitExec, "/nonexistent/cmd", false},
		{"exec refused by Landlock", sealRun{policy: `{"filesystem": {"allow": [{"path": "/proc", "access": "read"}]}}`, mode: 0o600}, ExitExec, "permission denied", false},
		{"policy writable by others", sealRun{policy: ok, mode: 0o666}, ExitPermission, "chmod go-w", false},
		{"set-user-ID", sealRun{policy: ok, mode: 0o644, pre: "setuid"}, ExitSetuid, "set-user-ID", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.root && os.Geteuid() != 0 {
				t.Skip("needs root")
			}
			if tt.run.args == nil {
				tt.run.args = []string{bin, "read:/proc/self/status"}
			}
			r := runSeal(t, tt.run)
			if r.code != tt.code || !strings.Contains(r.stderr, tt.stderr) || r.stdout != "" {
				t.Errorf("exit %d (signal %v), stderr %q, stdout %q; want exit %d and %q", r.code, r.signal, r.stderr, r.stdout, tt.code, tt.stderr)
			}
		})
	}
}

// TestKeepCaps: a policy given inline with KeepCaps (how a container's
// entrypoint is sealed) confines as well, and leaves the capability sets
// as they were: root keeps its bounding set.
func TestKeepCaps(t *testing.T) {
	testenv.StaticOnly(t, "it runs the test binary under a policy that lets only that binary execute, a static one")
	bin, _ := filepath.Abs(os.Args[0])
	r := runSeal(t, sealRun{policy: basePolicy(""), inline: true, args: []string{bin, "read:/etc/hostname", "status"}})
	if r.code != 0 || !strings.HasPrefix(r.stdout, "EACCES\n") || !strings.Contains(r.stdout, "NoNewPrivs: 1") {
		t.Fatalf("exit %d signal %v\nstdout %s\nstderr %s", r.code, r.signal, r.stdout, r.stderr)
	}
	if os.Geteuid() == 0 && strings.Contains(r.stdout, "CapBnd: 0000000000000000") {
		t.Errorf("root lost its bounding set under KeepCaps: %s", r.stdout)
	}
}
