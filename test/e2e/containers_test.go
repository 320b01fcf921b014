package e2e

import (
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/stockade-dev/stockade/internal/testenv"
)

// requireContainers skips when this host cannot give a sandbox a container
// engine (stockade doctor --containers fails), unless STOCKADE_MUST_WORK=1
// makes that a failure.
func requireContainers(t *testing.T) {
	t.Helper()
	requireSandbox(t)
	if out, err := exec.Command(bin, "doctor", "--containers").CombinedOutput(); err != nil {
		testenv.SkipOrFail(t, "--containers cannot run here (stockade doctor --containers fails):\n%s", out)
	}
}

// importImage makes the image img, a static busybox, through the engine.
const importImage = `set -e; d=$(mktemp -d); mkdir $d/bin; cp /bin/busybox $d/bin/; ln -s busybox $d/bin/sh; ln -s busybox $d/bin/true; ` +
	`tar -C $d -cf $d.tar .; podman --remote import -q $d.tar img >/dev/null; set +e; `

var sandboxID = regexp.MustCompile(`stockade: sandbox ([0-9a-f]+):`)

// TestContainerRefusalAudited: a container the hooks refuse is refused with
// the check's reason as the engine's error, and is an event of the run's
// audit log.
func TestContainerRefusalAudited(t *testing.T) {
	requireContainers(t)
	e := newEnv(t)
	r := e.run("", nil, "run", "--containers", "--", "sh", "-c", importImage+"podman --remote run --rm --cap-add ALL img true")
	const refusal = "stockade refused the container (check capabilities): process.capabilities.bounding: "
	if r.code == 0 || !strings.Contains(r.stderr, refusal) {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	m := sandboxID.FindStringSubmatch(r.stderr)
	if m == nil {
		t.Fatalf("no sandbox id in:\n%s", r.stderr)
	}
	logs := e.run("", nil, "logs", "-s", m[1])
	if !strings.Contains(logs.stdout, "engine: container refused (check capabilities): process.capabilities.bounding: ") ||
		!strings.Contains(logs.stdout, "image localhost/img:latest") {
		t.Errorf("the audit log has no refusal:\n%s%s", logs.stdout, logs.stderr)
	}
	if v := e.run("", nil, "logs", "-s", m[1], "--verify"); v.code != 0 {
		t.Errorf("logs --verify: exit %d\n%s%s", v.code, v.stdout, v.stderr)
	}
}

// TestRequireDigestNeedsContainers: --require-digest alone is a usage
// error that says what to add.
func TestRequireDigestNeedsContainers(t *testing.T) {
	e := newEnv(t)
	r := e.run("", nil, "run", "--require-digest", "--", "true")
	if r.code != 2 || !strings.Contains(r.stderr, "add --containers") || strings.Count(strings.TrimSpace(r.stderr), "\n") > 0 {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
}
