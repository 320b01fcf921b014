package job

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/stockade-dev/stockade/internal/authproxy"
	"github.com/stockade-dev/stockade/internal/sandboxnet"
	"github.com/stockade-dev/stockade/internal/sshagent"
)

// SSHAgent is the SSH agent a job's sandbox gets (--ssh).
type SSHAgent struct {
	// Upstream is the user's agent's socket on the host ($SSH_AUTH_SOCK).
	Upstream string `json:"upstream"`
	// Keys are the fingerprints of the only keys offered; empty: all.
	Keys []string `json:"keys,omitempty"`
}

// socketDir makes a new private directory in the host's temporary
// directory and a socket named name in it, which only its owner may use.
// MkdirTemp makes the directory 0700 under a name no one could have made
// first: the sandbox sees it through a read-only bind, the host's other
// users not at all. Nothing is left on an error.
func socketDir(prefix, name string) (string, net.Listener, error) {
	sweepSocketDirs(os.TempDir(), prefix, name)
	dir, err := os.MkdirTemp("", prefix)
	if err != nil {
		return "", nil, err
	}
	sock := filepath.Join(dir, name)
	ln, err := net.Listen("unix", sock)
	if err == nil {
		if err = os.Chmod(sock, 0o600); err != nil {
			ln.Close()
		}
	}
	if err != nil {
		os.RemoveAll(dir)
		return "", nil, err
	}
	return dir, ln, nil
}

// sweepSocketDirs removes the socket directories in tmp that a run killed
// before its cleanup (SIGKILL, a crash) left: its own user's directories
// named prefix..., whose socket is there and refuses connections, since no
// one listens on it any more. A directory being made (no socket yet), one
// whose socket is served, or anything it cannot tell stays.
func sweepSocketDirs(tmp, prefix, name string) {
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return
	}
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), prefix) {
			continue
		}
		dir := filepath.Join(tmp, e.Name())
		fi, err := os.Lstat(dir)
		if err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
			continue
		}
		if st, ok := fi.Sys().(*syscall.Stat_t); !ok || int(st.Uid) != os.Geteuid() {
			continue
		}
		c, err := net.DialTimeout("unix", filepath.Join(dir, name), 100*time.Millisecond)
		if err == nil {
			c.Close()
			continue
		}
		if errors.Is(err, syscall.ECONNREFUSED) {
			os.RemoveAll(dir)
		}
	}
}

// serveSSHAgent starts the filter in front of the user's agent on a socket
// of its own directory (sandboxnet.SSHAgentSock inside).
func serveSSHAgent(cfg SSHAgent, event func(string, map[string]any)) (*sshagent.Agent, string, error) {
	a, err := sshagent.New(sshagent.Config{Upstream: cfg.Upstream, Keys: cfg.Keys, Audit: event})
	if err != nil {
		return nil, "", fmt.Errorf("--ssh: %w", err)
	}
	dir, ln, err := socketDir("stockade-ssh-", filepath.Base(sandboxnet.SSHAgentSock))
	if err != nil {
		return nil, "", fmt.Errorf("--ssh: making the agent's socket: %w", err)
	}
	go func() {
		if err := a.Serve(ln); err != nil {
			event("warning", map[string]any{"message": "the SSH agent filter stopped: " + err.Error()})
		}
	}()
	return a, dir, nil
}

// ghConfig is gh's config.yml inside: every request of gh goes, in the
// clear, over the auth proxy's socket (gh's http_unix_socket), where the
// github route puts the real token in.
const ghConfig = "http_unix_socket: " + sandboxnet.GitHubSock + "\n"

// serveGitHub serves p on a socket of its own directory
// (sandboxnet.GitHubSock inside), beside gh's config.yml that names it.
func serveGitHub(p *authproxy.Proxy) (string, error) {
	dir, ln, err := socketDir("stockade-gh-", filepath.Base(sandboxnet.GitHubSock))
	if err != nil {
		return "", fmt.Errorf("--gh: making gh's socket: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "config.yml"), []byte(ghConfig), 0o600); err != nil {
		ln.Close()
		os.RemoveAll(dir)
		return "", fmt.Errorf("--gh: writing gh's configuration: %w", err)
	}
	go p.Serve(ln) // until the proxy's Close
	return dir, nil
}
