package cli

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/stockade-dev/stockade/internal/job"
	"github.com/stockade-dev/stockade/internal/policy"
	"github.com/stockade-dev/stockade/internal/sshagent"
)

// sshFlags give the sandbox an SSH agent in front of the user's (--ssh).
type sshFlags struct {
	SSH    bool     `name:"ssh" help:"Give the sandbox an SSH agent (SSH_AUTH_SOCK) in front of yours: it may list your keys and have them sign, nothing else; each signature is in the audit log; the keys stay outside. Loosens the sandbox."`
	SSHKey []string `name:"ssh-key" sep:"none" help:"With --ssh, offer only the key with this SHA256 fingerprint, as ssh-add -l prints it; repeatable." placeholder:"FINGERPRINT"`
}

// check refuses a malformed --ssh-key, or one without --ssh: usage errors.
func (f sshFlags) check() error {
	if len(f.SSHKey) > 0 && !f.SSH {
		return usageError{errors.New("--ssh-key needs --ssh")}
	}
	for _, k := range f.SSHKey {
		if !sshagent.ValidFingerprint(k) {
			return usageError{fmt.Errorf("--ssh-key %s: not a SHA256 fingerprint; give one as ssh-add -l prints it (SHA256:...)", k)}
		}
	}
	return nil
}

// agent checks that the user's agent is there and holds the keys named,
// and returns the job's SSHAgent and the loosening to print; nil without
// --ssh.
func (f sshFlags) agent(p policy.Policy) (*job.SSHAgent, string, error) {
	if !f.SSH {
		return nil, "", nil
	}
	sock := os.Getenv("SSH_AUTH_SOCK")
	if sock == "" {
		return nil, "", errors.New(`--ssh: SSH_AUTH_SOCK is not set, so there is no SSH agent to forward; start one (eval "$(ssh-agent)"; ssh-add) or leave out --ssh`)
	}
	if !filepath.IsAbs(sock) {
		return nil, "", fmt.Errorf("--ssh: SSH_AUTH_SOCK=%s is not an absolute path; set it to your agent's socket", sock)
	}
	if tree, ok := seenInside(sock, p); ok {
		return nil, "", fmt.Errorf("--ssh: your agent's socket %s is inside %s, which the sandbox sees: it could use your agent directly, past the filter; start the agent elsewhere (ssh-agent -a PATH) or leave %s out of the sandbox", sock, tree, tree)
	}
	held, err := sshagent.List(sock)
	if err != nil {
		return nil, "", fmt.Errorf("--ssh: reaching your SSH agent at %s: %w; check that it runs (ssh-add -l)", sock, err)
	}
	for _, k := range f.SSHKey {
		if !slices.Contains(held, k) {
			return nil, "", fmt.Errorf("--ssh-key %s: your SSH agent holds no such key; ssh-add -l lists the ones it holds", k)
		}
	}
	keys := "every key your agent holds"
	if len(f.SSHKey) > 0 {
		keys = strings.Join(f.SSHKey, ", ")
	}
	loosened := fmt.Sprintf("ssh: the sandbox can have your SSH agent sign with %s (each signature is audited; the keys stay outside)", keys)
	return &job.SSHAgent{Upstream: sock, Keys: f.SSHKey}, loosened, nil
}

// seenInside returns the tree of p (the workdir, an ro or rw entry) that
// holds path, links resolved, if one does: the sandbox can connect to a
// socket there (a read-only bind does not stop a connect).
func seenInside(path string, p policy.Policy) (string, bool) {
	canon := func(p string) string {
		if c, err := filepath.EvalSymlinks(p); err == nil {
			return c
		}
		return filepath.Clean(p)
	}
	path = canon(path)
	for _, tree := range append(append([]string{p.Workdir}, p.RO...), p.RW...) {
		if tree == "" {
			continue
		}
		t := canon(tree)
		if path == t || strings.HasPrefix(path, strings.TrimSuffix(t, "/")+"/") {
			return tree, true
		}
	}
	return "", false
}
