package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stockade-dev/stockade/internal/engine"
)

// TestAgentContainers: `stockade claude --containers` (and codex, gemini,
// opencode) gives the agent DOCKER_HOST and CONTAINER_HOST at the
// session's engine, and the docker CLI the agent runs answers and starts
// a container there. The
// agent's CLI is a script that stands in for it (the real CLIs are driven
// in TestAgents); it holds the placeholder, never the real key.
func TestAgentContainers(t *testing.T) {
	requireContainers(t)
	for _, c := range []struct {
		name, keyEnv, key string
		args              []string // the non-interactive mode, as in agentCases
	}{
		{"claude", "ANTHROPIC_API_KEY", "sk-ant-api03-REALKEY-agentcontainers", []string{"-p", "hi"}},
		{"codex", "OPENAI_API_KEY", "sk-proj-REALKEY-agentcontainers", []string{"exec", "--skip-git-repo-check", "hi"}},
		{"gemini", "GEMINI_API_KEY", "AIzaSy-REALKEY-agentcontainers", []string{"-p", "hi"}},
		{"opencode", "ANTHROPIC_API_KEY", "sk-ant-api03-REALKEY-agentcontainers", []string{"run", "hi"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			wrap := filepath.Join(t.TempDir(), "bin")
			os.MkdirAll(wrap, 0o755)
			os.Chmod(filepath.Dir(wrap), 0o755)
			script := "#!/bin/sh\n" +
				`echo "DOCKER_HOST=$DOCKER_HOST CONTAINER_HOST=$CONTAINER_HOST KEY=$` + c.keyEnv + `"` + "\n" +
				`docker version --format 'SERVER {{.Server.APIVersion}}' 2>&1` + "\n" +
				importImage + `docker run --rm img echo CONTAINER-RAN 2>&1` + "\n"
			os.WriteFile(filepath.Join(wrap, c.name), []byte(script), 0o755)
			// Later wins in exec's environment: the key and the stand-in first on PATH.
			e.vars = append(e.vars, c.keyEnv+"="+c.key, "PATH="+wrap+":/usr/local/bin:/usr/bin:/bin")
			r := e.runCtr(2*time.Minute, append([]string{c.name, "--containers", "--"}, c.args...)...)
			if r.code != 0 {
				t.Fatalf("stockade %s --containers: exit %d\nstdout: %s\nstderr: %s", c.name, r.code, r.stdout, r.stderr)
			}
			hosts := "DOCKER_HOST=unix://" + engine.Socket + " CONTAINER_HOST=unix://" + engine.Socket + " KEY=sk-proxy"
			for _, want := range []*regexp.Regexp{
				regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(hosts) + `$`),
				regexp.MustCompile(`(?m)^SERVER \d+\.\d+$`),
				regexp.MustCompile(`(?m)^CONTAINER-RAN$`),
			} {
				if !want.MatchString(r.stdout) {
					t.Errorf("the agent's output lacks %s:\nstdout: %s\nstderr: %s", want, r.stdout, r.stderr)
				}
			}
			if strings.Contains(r.stdout+r.stderr, c.key) {
				t.Error("the real key appears in the agent's output")
			}
		})
	}
}
