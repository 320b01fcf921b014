package job

import (
	"fmt"
	"net"
	"os"
	"path/filepath"

	"github.com/stockade-dev/stockade/internal/sshagent"
)

// SSHAgent is the SSH agent a job's sandbox gets (--ssh).
type SSHAgent struct {
	// Upstream is the user's agent's socket on the host ($SSH_AUTH_SOCK).
	Upstream string `json:"upstream"`
	// Keys are the fingerprints of the only keys offered; empty: all.
	Keys []string `json:"keys,omitempty"`
}

// serveSSHAgent starts the filter in front of the user's agent, on a
// socket in a new private directory of the host's temporary directory,
// which the sandbox sees read-only (sandbox.Config.SSHAgentDir). Nothing of
// it is left on an error.
func serveSSHAgent(cfg SSHAgent, event func(string, map[string]any)) (*sshagent.Agent, string, error) {
	a, err := sshagent.New(sshagent.Config{Upstream: cfg.Upstream, Keys: cfg.Keys, Audit: event})
	if err != nil {
		return nil, "", fmt.Errorf("--ssh: %w", err)
	}
	// MkdirTemp makes the directory 0700 under a name no one could have
	// made first: the sandbox sees it through a bind, the host's other
	// users not at all.
	dir, err := os.MkdirTemp("", "stockade-ssh-")
	if err != nil {
		return nil, "", fmt.Errorf("--ssh: making the agent's socket: %w", err)
	}
	ln, err := net.Listen("unix", filepath.Join(dir, "agent.sock"))
	if err == nil {
		err = os.Chmod(filepath.Join(dir, "agent.sock"), 0o600)
		if err != nil {
			ln.Close()
		}
	}
	if err != nil {
		os.RemoveAll(dir)
		return nil, "", fmt.Errorf("--ssh: making the agent's socket: %w", err)
	}
	go func() {
		if err := a.Serve(ln); err != nil {
			event("warning", map[string]any{"message": "the SSH agent filter stopped: " + err.Error()})
		}
	}()
	return a, dir, nil
}
