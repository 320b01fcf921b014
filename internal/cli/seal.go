package cli

import (
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/stockade-dev/stockade/internal/seal"
)

type sealCmd struct {
	PolicyFile string   `name:"policy-file" xor:"policy" type:"path" placeholder:"FILE" help:"Read the policy from FILE (not writable by group or others) instead of descriptor 3."`
	Policy     string   `name:"policy" placeholder:"JSON" help:"The policy itself, instead of a file or descriptor 3." xor:"policy"`
	KeepCaps   bool     `name:"keep-caps" help:"Leave the capability sets as they are (for a container's entrypoint, whose OCI config limits them)."`
	Command    []string `arg:"" passthrough:"partial" help:"The command to confine, after --." placeholder:"-- CMD [ARGS...]"`
}

// Help is the long help of stockade seal.
func (sealCmd) Help() string {
	return strings.TrimSpace(`
Confines this process with Landlock, seccomp and an empty capability set, then
executes CMD in its place. No namespace, no proxy: it adds walls inside a
container or sandbox you already have, and is the wrapper stockade's container
hooks put in front of a container's entrypoint.

The policy is JSON (the format of SafeClaw's sandbox helper):

  {"filesystem": {"allow": [{"path": "/work", "access": "readwrite"},
                            {"path": "/usr",  "access": "execute"}],
                  "deny":  ["/work/.env"]},
   "syscalls":   {"allow": ["read", "write", "execve", "exit_group"],
                  "defaultDeny": true}}

access is read, write (implies read), readwrite (the same) or execute (read and
run); other paths are denied, and a deny wins over an allow above it. With
defaultDeny, any system call not listed kills the command (SIGSYS); without,
stockade's default seccomp profile applies.

Exit status: CMD's own, or 70 bad policy, 71 Landlock, 72 seccomp,
73 capabilities, 74 exec, 75 no_new_privs or a policy file others can write,
76 running set-user-ID. See docs/seal.md.`)
}

func (c *sealCmd) Run() error {
	args := c.Command
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "stockade seal: no command; usage: stockade seal [--policy-file FILE] -- CMD [ARGS...]")
		return exitError{seal.ExitPolicy}
	}
	err := seal.Run(seal.Options{Policy: []byte(c.Policy), PolicyFile: c.PolicyFile, KeepCaps: c.KeepCaps, Args: args, Env: os.Environ()})
	var se *seal.Error
	if errors.As(err, &se) {
		fmt.Fprintf(os.Stderr, "stockade seal: %v\n", se.Err)
		return exitError{se.Code}
	}
	return err
}
