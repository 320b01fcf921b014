package e2e

// The container engine of `stockade run --containers` with real clients:
// the docker CLI, the podman remote client, a Testcontainers-style client of
// the Docker API (tcclient), and Debian's docker-registry on the test network
// (scripts/testnet.sh: registry.test and mirror.test, both 198.51.100.30:5000,
// plain HTTP, with stockade/busybox:1 pushed). The escape battery has the
// attacks (test/escape/rows_containers_test.go).

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stockade-dev/stockade/internal/testenv"
)

// testImage is the image the test registry holds (test/netenv/pushimage).
const testImage = "registry.test:5000/stockade/busybox:1"

// importImage makes the image img from the host's static busybox, through
// the engine, for the tests that need no registry.
const importImage = `set -e; d=$(mktemp -d); mkdir $d/bin; cp /bin/busybox $d/bin/; ` +
	`for c in sh echo nc true cat; do ln -s busybox $d/bin/$c; done; ` +
	`tar -C $d -cf $d.tar .; podman --remote import -q $d.tar img >/dev/null; set +e; `

// requireContainers skips (fails with STOCKADE_MUST_WORK=1) when this host
// cannot run the engine.
func requireContainers(t *testing.T) {
	t.Helper()
	requireSandbox(t)
	if out, err := exec.Command(bin, "doctor", "--containers").CombinedOutput(); err != nil {
		testenv.SkipOrFail(t, "--containers cannot run here (stockade doctor --containers fails):\n%s", out)
	}
}

// runCtr is run with the time an engine needs.
func (e *env) runCtr(timeout time.Duration, args ...string) result {
	cmd := exec.Command(bin, args...)
	cmd.Dir = e.workdir
	cmd.Env = e.vars
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Start(); err != nil {
		return result{-1, "", err.Error()} // a caller may be off the test's goroutine
	}
	timer := time.AfterFunc(timeout, func() { cmd.Process.Signal(syscall.SIGTERM) })
	defer timer.Stop()
	err := cmd.Wait()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		return result{-1, out.String(), errb.String() + err.Error()}
	}
	return result{code, out.String(), errb.String()}
}

// TestContainersTestcontainersClient: a client of the Docker API, as
// Testcontainers is, starts a container publishing a random port and talks
// to it on the sandbox's 127.0.0.1.
func TestContainersTestcontainersClient(t *testing.T) {
	requireContainers(t)
	e := newEnv(t)
	client := filepath.Join(e.workdir, "tcclient")
	if err := testenv.Build(client, "./test/e2e/tcclient"); err != nil {
		t.Fatal(err)
	}
	res := e.runCtr(2*time.Minute, "run", "--log-level", "error", "--containers", "--", "sh", "-c", importImage+"./tcclient localhost/img")
	f := strings.Fields(res.stdout)
	if res.code != 0 || len(f) != 3 || f[0] != "OK" || f[2] != "hello-from-the-container" {
		t.Fatalf("tcclient: %q (exit %d), want OK PORT hello-from-the-container\nstderr: %s", res.stdout, res.code, res.stderr)
	}
}

// TestContainersPublishedPort: a published port, fixed or random, answers
// on the sandbox's 127.0.0.1 and not on the host's. The sandbox says when
// its ports answer through a FIFO in the workdir and waits on another for
// the host's check.
func TestContainersPublishedPort(t *testing.T) {
	requireContainers(t)
	e := newEnv(t)
	ready, done := filepath.Join(e.workdir, "ready"), filepath.Join(e.workdir, "done")
	for _, p := range []string{ready, done} {
		if err := syscall.Mkfifo(p, 0o666); err != nil {
			t.Fatal(err)
		}
	}
	const fixed = "15432"
	script := importImage + `
docker run -d -p 127.0.0.1:` + fixed + `:5432 img sh -c 'while :; do echo fixed-port | nc -l -p 5432; done' >/dev/null || exit 1
id=$(podman --remote run -d -p 5433 img sh -c 'while :; do echo random-port | nc -l -p 5433; done') || exit 1
port=$(podman --remote port $id 5433/tcp | sed 's/.*://')
get() { for i in $(seq 100); do l=$(busybox nc 127.0.0.1 $1 </dev/null 2>/dev/null) && [ -n "$l" ] && { echo "$l"; return; }; busybox usleep 100000; done; echo "NOANSWER $1"; }
echo "$(get ` + fixed + `) $(get $port)"
echo "$port" >ready
read x <done
`
	c := make(chan result, 1)
	go func() {
		c <- e.runCtr(2*time.Minute, "run", "--log-level", "error", "--containers", "--", "sh", "-c", script)
	}()
	got := make(chan string, 1)
	go func() {
		// Open blocks until the sandbox opens the FIFO to write, or the
		// test does once the run has ended without it.
		f, err := os.Open(ready)
		if err != nil {
			got <- ""
			return
		}
		line, _ := bufio.NewReader(f).ReadString('\n')
		f.Close()
		got <- strings.TrimSpace(line)
	}()
	var port string
	select {
	case port = <-got:
	case r := <-c:
		if w, err := os.OpenFile(ready, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
			w.Close()
		}
		t.Fatalf("the run ended before its ports answered: %q (exit %d)\nstderr: %s", r.stdout, r.code, r.stderr)
	}
	for _, p := range []string{fixed, port} {
		if p == "" {
			break
		}
		conn, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", p), 2*time.Second)
		if err == nil {
			line, _ := bufio.NewReader(conn).ReadString('\n')
			conn.Close()
			if strings.Contains(line, "-port") {
				t.Errorf("the container's port %s answers on the host's 127.0.0.1: %q", p, line)
			}
		}
	}
	if w, err := os.OpenFile(done, os.O_WRONLY, 0); err == nil {
		w.WriteString("done\n")
		w.Close()
	}
	r := <-c
	if r.code != 0 || strings.TrimSpace(r.stdout) != "fixed-port random-port" {
		t.Fatalf("inside: %q (exit %d), want \"fixed-port random-port\"\nstderr: %s", r.stdout, r.code, r.stderr)
	}
	if port == "" {
		t.Fatal("the sandbox sent no port")
	}
}

// TestContainersFlags: the engine's flags are checked before anything is
// made, and the loosenings among them are said.
func TestContainersFlags(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--pod-allow", "example.com"}, "--pod-allow is a setting of the container engine; add --containers"},
		{[]string{"--registry-allow", "ghcr.io"}, "--registry-allow is a setting of the container engine; add --containers"},
		{[]string{"--containers", "--pod-policy", "open"}, `flag --pod-policy: "open" is not a policy; write deny or allow`},
		{[]string{"--containers", "--pod-allow", "a b"}, `flag --pod-allow: "a b" is not a network rule`},
		{[]string{"--containers", "--registry-allow", "ghcr.io/org"}, `flag --registry-allow: "ghcr.io/org" is not a registry`},
		{[]string{"--containers", "--registry-allow", "*.example.com"}, `is not a registry`},
		{[]string{"--containers-storage", "session"}, "--containers-storage is a setting of the container engine; add --containers"},
		{[]string{"--containers", "--containers-storage", "host"}, `flag --containers-storage: "host" is not a storage; write project or session`},
	} {
		res := e.run("", nil, append(append([]string{"run"}, c.args...), "--", "true")...)
		lines := stderrLines(res.stderr)
		if res.code != 2 || len(lines) != 1 || !strings.Contains(lines[0], c.want) {
			t.Errorf("run %q: exit %d, stderr %q; want exit 2 and one line with %q", c.args, res.code, res.stderr, c.want)
		}
	}
	if _, err := os.Stat(filepath.Join(e.home, ".local/share/stockade")); err == nil {
		t.Errorf("a refused start made stockade's data directory")
	}
	requireContainers(t)
	res := e.runCtr(time.Minute, "run", "--containers", "--pod-policy", "allow", "--registry-allow", "http://registry.test:5000", "--", "true")
	for _, want := range []string{
		"stockade: LOOSENED: pod_policy allow: ",
		"stockade: LOOSENED: registry_allow http://registry.test:5000: ",
	} {
		if !strings.Contains(res.stderr, want) {
			t.Errorf("no %q line:\n%s", want, res.stderr)
		}
	}
	if res.code != 0 {
		t.Errorf("exit %d: %s", res.code, res.stderr)
	}
}

// TestContainersRegistry: the engine pulls through the registry proxy
// from the registries --registry-allow names, and from no other; neither
// the command's own proxy nor the registry proxy lets the command reach
// them; a build FROM a pulled image works.
func TestContainersRegistry(t *testing.T) {
	requireContainers(t)
	requireTestnet(t)
	for _, c := range []struct {
		name   string
		flags  []string
		script string
		want   string
	}{
		{"podman_pull", []string{"--registry-allow", "http://registry.test:5000"},
			`podman --remote pull -q ` + testImage + ` >/dev/null && podman --remote run --rm ` + testImage + ` echo pulled`, "pulled"},
		{"docker_pull", []string{"--registry-allow", "http://registry.test:5000"},
			`docker pull -q ` + testImage + ` >/dev/null && docker run --rm ` + testImage + ` echo pulled`, "pulled"},
		// The same address under another name: the allowlist is of names.
		{"other_name_denied", []string{"--registry-allow", "http://registry.test:5000"},
			`docker pull -q mirror.test:5000/stockade/busybox:1 >/dev/null 2>&1 && echo PULLED || echo DENIED`, "DENIED"},
		{"none_allowed", nil,
			`podman --remote pull -q ` + testImage + ` >/dev/null 2>&1 && echo PULLED || echo DENIED`, "DENIED"},
		// The registry is the engine's, not the command's.
		{"agent_proxy_refuses", []string{"--registry-allow", "http://registry.test:5000"},
			`curl -s -o /dev/null -w '%{http_code}' http://registry.test:5000/v2/`, "403"},
		// Nor is the registry proxy: it answers the engine's connections
		// only, in the session where the engine pulls through it.
		{"registry_proxy_refuses_command", []string{"--registry-allow", "http://registry.test:5000"},
			`podman --remote pull -q ` + testImage + ` >/dev/null && printf 'pulled '; ` +
				`curl -s -o /dev/null -w '%{http_code} ' -x http://127.0.0.1:3130 http://registry.test:5000/v2/; ` +
				`curl -s -o /dev/null -w '%{http_connect} ' -p -x http://127.0.0.1:3130 http://registry.test:5000/v2/; ` +
				`curl -s -x http://127.0.0.1:3130 http://registry.test:5000/v2/ | grep -c 'serves its pulls only'`, "pulled 403 403 1"},
		// A build through the Docker API: its RUN steps get a network
		// namespace of their own, none at all being the engine's.
		{"docker_build", []string{"--registry-allow", "http://registry.test:5000"},
			`mkdir ctx && printf 'FROM ` + testImage + `\nRUN echo built >/built\nCMD ["cat", "/built"]\n' >ctx/Dockerfile && ` +
				`docker build -q -t dbuilt ctx >/dev/null && docker run --rm dbuilt`, "built"},
		{"build_from", []string{"--registry-allow", "http://registry.test:5000"},
			`mkdir ctx && printf 'FROM ` + testImage + `\nRUN echo built >/built\nCMD ["cat", "/built"]\n' >ctx/Dockerfile && ` +
				`podman --remote build -q -t built ctx >/dev/null && podman --remote run --rm built`, "built"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			args := append([]string{"run", "--log-level", "error", "--resolver", testnetDNS, "--containers"}, c.flags...)
			res := e.runCtr(2*time.Minute, append(args, "--", "sh", "-c", c.script)...)
			if res.code != 0 || strings.TrimSpace(res.stdout) != c.want {
				t.Fatalf("got %q (exit %d), want %q\nstderr: %s", res.stdout, res.code, c.want, res.stderr)
			}
			if c.name == "registry_proxy_refuses_command" {
				// Each refusal is the session's audit event.
				logs, _ := filepath.Glob(filepath.Join(e.home, ".local/state/stockade/audit/*.jsonl"))
				n := 0
				for _, l := range logs {
					b, _ := os.ReadFile(l)
					n += strings.Count(string(b), `"proto":"registry"`)
				}
				if n != 3 {
					t.Errorf("the audit logs %q hold %d refusals of the registry proxy, want 3", logs, n)
				}
			}
		})
	}
}

// TestContainersPodPolicy: the containers' egress goes through the pods'
// proxy under the pods' policy: the agent's by default, or their own.
func TestContainersPodPolicy(t *testing.T) {
	requireContainers(t)
	requireTestnet(t)
	// Each prints the status of the container's request, then the
	// command's own.
	get := func(host string) string {
		return `docker run --rm ` + testImage + ` sh -c 'if wget -q -O /dev/null http://` + host + `/ 2>/tmp/e; then echo 200; ` +
			`else s=$(grep -o " [0-9][0-9][0-9] " /tmp/e | head -n 1); echo ${s:-FAIL}; cat /tmp/e >&2; fi'; ` +
			`curl -s -o /dev/null -w '%{http_code}\n' http://` + host + `/`
	}
	pull := `podman --remote pull -q ` + testImage + ` >/dev/null || exit 1; `
	for _, c := range []struct {
		name  string
		flags []string
		host  string
		want  string // the container's status, the command's
	}{
		{"agents_by_default", []string{"--agent-allow", "allowed.test"}, "allowed.test", "200 200"},
		{"agents_deny_by_default", []string{"--agent-allow", "allowed.test"}, "other.test", "403 403"},
		{"pod_allow_adds", []string{"--agent-allow", "allowed.test", "--pod-allow", "other.test"}, "other.test", "200 403"},
		{"pod_block", []string{"--agent-allow", "allowed.test", "--pod-block", "allowed.test"}, "allowed.test", "403 200"},
		{"pod_policy_deny_own", []string{"--agent-allow", "allowed.test", "--pod-policy", "deny"}, "allowed.test", "403 200"},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newEnv(t)
			args := append([]string{"run", "--log-level", "error", "--resolver", testnetDNS, "--containers",
				"--registry-allow", "http://registry.test:5000"}, c.flags...)
			res := e.runCtr(2*time.Minute, append(args, "--", "sh", "-c", pull+get(c.host))...)
			if got := strings.Join(strings.Fields(res.stdout), " "); res.code != 0 || got != c.want {
				t.Fatalf("got %q (exit %d), want %q (the container's, the command's)\nstderr: %s", got, res.code, c.want, res.stderr)
			}
		})
	}
}

// TestContainersPodRuntimeRule: `network pod allow` opens a host to the
// containers of a running session, not to its command, and the audit log
// has the pods' denial, the rule and the connection.
func TestContainersPodRuntimeRule(t *testing.T) {
	requireContainers(t)
	requireTestnet(t)
	e := newEnv(t)
	// Bounded: 100 containers, 0.1 s apart. After success it waits to be
	// stopped, so that the session is still there for `network list`.
	// (podman's client, not docker's: with --rm, the docker CLI gets exit
	// status 0 from podman 4.3's API whatever the container's was.)
	script := `podman --remote pull -q ` + testImage + ` >/dev/null || exit 1; i=0; while [ $i -lt 100 ]; do
if podman --remote run --rm ` + testImage + ` wget -q -O /dev/null http://other.test/ 2>/dev/null; then echo reached > marker; exec sleep 60; fi
i=$((i+1)); sleep 0.1; done; exit 1`
	r := e.runCtr(time.Minute, "run", "-d", "--log-level", "error", "--resolver", testnetDNS, "--containers",
		"--registry-allow", "http://registry.test:5000", "--", "sh", "-c", script)
	id := strings.TrimSpace(r.stdout)
	if r.code != 0 || id == "" {
		t.Fatalf("run -d: exit %d %q\n%s", r.code, r.stdout, r.stderr)
	}
	defer e.run("", nil, "stop", "-s", id)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	follow := exec.CommandContext(ctx, bin, "logs", "-f", "-s", id)
	follow.Env = e.vars
	out, err := follow.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := follow.Start(); err != nil {
		t.Fatal(err)
	}
	sc, denied := bufio.NewScanner(out), false
	for !denied && sc.Scan() {
		denied = strings.Contains(sc.Text(), "network denied: other.test:80")
	}
	cancel()
	follow.Wait()
	if !denied {
		t.Fatal("no network_denied event for other.test within 60 s")
	}
	if r := e.run("", nil, "network", "pod", "allow", "-s", id, "other.test"); r.code != 0 {
		t.Fatalf("network pod allow: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if !waitFor(func() bool { _, err := os.Stat(e.workdir + "/marker"); return err == nil }) {
		t.Fatalf("other.test was not reached after the rule was added\n%s", e.run("", nil, "logs", "-s", id).stdout)
	}
	if r := e.run("", nil, "network", "pod", "list", "-s", id); !strings.Contains(r.stdout, "other.test") ||
		!strings.Contains(r.stdout, "the containers' policy deny") {
		t.Errorf("network pod list: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := e.run("", nil, "network", "list", "-s", id); strings.Contains(r.stdout, "other.test") {
		t.Errorf("the pods' rule is in the agent's rules:\n%s", r.stdout)
	}
	// A connection is recorded once it has ended: poll for it.
	var logs string
	waitFor(func() bool {
		logs = e.run("", nil, "logs", "-s", id, "--json").stdout
		return strings.Contains(logs, `"source":"pod","event":"connection"`)
	})
	for _, want := range []string{`"source":"pod","event":"network_denied"`, `"scope":"pod"`, `"source":"pod","event":"connection"`, `"source":"registry","event":"connection"`} {
		if !strings.Contains(logs, want) {
			t.Errorf("the audit log lacks %s:\n%s", want, logs)
		}
	}
}

// TestContainersRequireDigest: under --require-digest (the createRuntime
// hook's check of the image reference), an image pulled from the test
// registry by tag is refused, the same image by digest runs.
func TestContainersRequireDigest(t *testing.T) {
	requireContainers(t)
	requireTestnet(t)
	digest, err := os.ReadFile("/run/stk-testnet-registry.digest")
	if err != nil {
		t.Fatal(err)
	}
	pinned := strings.TrimSuffix(testImage, ":1") + "@" + strings.TrimSpace(string(digest))
	e := newEnv(t)
	script := `podman --remote pull -q ` + testImage + ` >/dev/null && podman --remote pull -q ` + pinned + ` >/dev/null || exit 1
podman --remote run --rm ` + testImage + ` echo LEAKED 2>&1 | grep -q 'not pinned by digest' && echo REFUSED
podman --remote run --rm ` + pinned + ` echo by-digest`
	res := e.runCtr(2*time.Minute, "run", "--log-level", "error", "--resolver", testnetDNS, "--containers", "--require-digest",
		"--registry-allow", "http://registry.test:5000", "--", "sh", "-c", script)
	if got := strings.Join(strings.Fields(res.stdout), " "); res.code != 0 || got != "REFUSED by-digest" {
		t.Fatalf("got %q (exit %d), want \"REFUSED by-digest\"\nstderr: %s", got, res.code, res.stderr)
	}
}

var sandboxID = regexp.MustCompile(`stockade: sandbox ([0-9a-f]+):`)

// TestContainerRefusalAudited: a container the hooks refuse is refused with
// the check's reason as the engine's error, and is an event of the run's
// audit log.
func TestContainerRefusalAudited(t *testing.T) {
	requireContainers(t)
	e := newEnv(t)
	// The hook's refusal, the runtime's (an annotation crun acts on) and
	// the API filter's (a chroot build), each an event of the session.
	r := e.run("", nil, "run", "--containers", "--", "sh", "-c", importImage+
		"podman --remote run --rm --annotation run.oci.hooks.stdout=/tmp/x img true; "+
		"c=$(mktemp -d); printf 'FROM localhost/img\\nRUN true\\n' >$c/Containerfile; podman --remote build --isolation chroot $c; "+
		"podman --remote run --rm --cap-add ALL img true")
	const refusal = "stockade refused the container (check capabilities): process.capabilities.bounding: "
	if r.code == 0 || !strings.Contains(r.stderr, refusal) ||
		!strings.Contains(r.stderr, "stockade refused the container (check annotations): annotations.run.oci.hooks.stdout: ") ||
		!strings.Contains(r.stderr, `stockade refused the request (isolation): a build with isolation "2 (chroot)" runs its steps outside the engine's runtime`) {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	m := sandboxID.FindStringSubmatch(r.stderr)
	if m == nil {
		t.Fatalf("no sandbox id in:\n%s", r.stderr)
	}
	logs := e.run("", nil, "logs", "-s", m[1])
	if !strings.Contains(logs.stdout, "engine: container refused (check capabilities): process.capabilities.bounding: ") ||
		!strings.Contains(logs.stdout, "image localhost/img:latest") ||
		!strings.Contains(logs.stdout, "engine: container refused (check annotations): annotations.run.oci.hooks.stdout: ") ||
		!strings.Contains(logs.stdout, "engine: container refused (check isolation): isolation: ") {
		t.Errorf("the audit log has no refusal:\n%s%s", logs.stdout, logs.stderr)
	}
	if v := e.run("", nil, "logs", "-s", m[1], "--verify"); v.code != 0 {
		t.Errorf("logs --verify: exit %d\n%s%s", v.code, v.stdout, v.stderr)
	}
}

// TestContainersBuildCacheMount: a RUN step's cache mount (buildah binds
// it shared, which the build checks refuse) works, made private, and
// keeps what one build put there for the next.
func TestContainersBuildCacheMount(t *testing.T) {
	requireContainers(t)
	e := newEnv(t)
	r := e.run("", nil, "run", "--containers", "--", "sh", "-c", importImage+
		"c=$(mktemp -d); printf 'FROM localhost/img\\nRUN --mount=type=cache,target=/c sh -c \"cat /c/n 2>/dev/null; echo cached >/c/n\"\\n' >$c/Containerfile; "+
		"podman --remote build --no-cache $c >/dev/null 2>&1 || echo FIRST-FAILED; podman --remote build --no-cache $c 2>&1 | grep -x cached || echo SECOND-SAW-NOTHING")
	if r.code != 0 || strings.TrimSpace(r.stdout) != "cached" {
		t.Fatalf("exit %d, stdout %q, stderr:\n%s", r.code, r.stdout, r.stderr)
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

// TestContainersLeaveHostCgroups: the engine (podman) moves every process
// of the root of its cgroup namespace into a child "init" when it starts.
// Rooted where the sandbox is in the unified hierarchy, which is the
// supervisor's own cgroup on a machine whose v2 hierarchy has no
// controllers, that moved processes outside the sandbox. The engine makes
// a cgroup of its own first: this process stays where it was, and nothing
// is left below its cgroup once the run is over.
func TestContainersLeaveHostCgroups(t *testing.T) {
	requireContainers(t)
	own := func() string {
		b, err := os.ReadFile("/proc/self/cgroup")
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range strings.Split(string(b), "\n") {
			if p, ok := strings.CutPrefix(l, "0::"); ok {
				return p
			}
		}
		return ""
	}
	mount := ""
	if b, err := os.ReadFile("/proc/self/mountinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			f := strings.Fields(l)
			for i, x := range f {
				if x == "-" && i+1 < len(f) && f[i+1] == "cgroup2" && f[3] == "/" {
					mount = f[4]
				}
			}
		}
	}
	before := own()
	if before == "" || mount == "" {
		t.Fatalf("no unified hierarchy (cgroup %q, mount %q): the engine needs one", before, mount)
	}
	dir := filepath.Join(mount, before)
	list := func() []string {
		var dirs []string
		ents, _ := os.ReadDir(dir)
		for _, e := range ents {
			if e.IsDir() && (e.Name() == "init" || strings.HasPrefix(e.Name(), "stockade-engine-")) {
				dirs = append(dirs, e.Name())
			}
		}
		return dirs
	}
	// An engine cgroup of a supervisor killed earlier (another test's
	// SIGKILL, perhaps as another user, who alone may remove it) may be
	// there: only what this run leaves counts. A podman "init" is always
	// a fault.
	was := map[string]bool{}
	for _, name := range list() {
		if name == "init" {
			t.Fatalf("%s holds %q before the run: left by a podman that moved the processes of its cgroup", dir, name)
		}
		was[name] = true
	}
	e := newEnv(t)
	r := e.runCtr(2*time.Minute, "run", "--log-level", "error", "--containers", "--", "sh", "-c", "podman --remote version --format '{{.Server.Version}}'")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if after := own(); after != before {
		t.Errorf("this process was moved from cgroup %s to %s by the sandbox's engine", before, after)
	}
	// Other packages' sandboxes run engines at the same time, in this same
	// cgroup: a new engine cgroup that holds a process is one of theirs.
	// An empty one is a leak unless its own supervisor is removing it
	// (which takes at most engine's 5 s wait): this run's supervisor has
	// already removed its own before it exited.
	deadline := time.Now().Add(15 * time.Second)
	for {
		var left []string
		for _, name := range list() {
			if name == "init" {
				t.Fatalf("%s holds %q after the run: podman moved the processes of its cgroup", dir, name)
			}
			if was[name] {
				continue
			}
			if pids := cgroupPids(filepath.Join(dir, name)); len(pids) > 0 {
				// Another sandbox's engine descends from its supervisor
				// through the nsenter that started its launcher; this
				// run's supervisor has exited, so a process of this run
				// left behind has an orphaned nsenter, or none.
				for _, pid := range pids {
					if why := orphaned(pid); why != "" {
						t.Fatalf("%s holds process %d after the run, %s: an engine process outlived its sandbox", name, pid, why)
					}
				}
				t.Logf("%s: a live engine of another sandbox", name)
				was[name] = true
				continue
			}
			left = append(left, name)
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s holds %q after the run, empty: the supervisor left its engine's cgroup", dir, left)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// cgroupPids are the processes in the cgroup dir and those below it
// (podman runs in a child "init" of its engine's cgroup).
func cgroupPids(dir string) []int {
	var pids []int
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && d.Name() == "cgroup.procs" {
			b, _ := os.ReadFile(p)
			for _, f := range strings.Fields(string(b)) {
				if pid, err := strconv.Atoi(f); err == nil {
					pids = append(pids, pid)
				}
			}
		}
		return nil
	})
	return pids
}

// orphaned says why pid is not a live sandbox's engine process, "" when it
// is: among its ancestors is an nsenter (which started the launcher)
// whose parent, a supervisor, is alive and not pid 1. A process that has
// exited meanwhile is nothing to say.
func orphaned(pid int) string {
	for p, depth := pid, 0; p > 1 && depth < 64; depth++ {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p))
		if err != nil {
			return "" // gone
		}
		// pid (comm) state ppid ...: comm may hold spaces and parentheses.
		s := string(stat)
		open, close := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
		if open < 0 || close < open {
			return "with an unreadable stat"
		}
		fields := strings.Fields(s[close+1:])
		if len(fields) < 2 {
			return "with an unreadable stat"
		}
		ppid, _ := strconv.Atoi(fields[1])
		if s[open+1:close] == "nsenter" {
			if ppid <= 1 {
				return "its nsenter orphaned"
			}
			return ""
		}
		p = ppid
	}
	return "with no nsenter among its ancestors"
}

// storeOf is the project's engine storage in e's data directory, after a
// run made it (newEnv's cleanup removes it).
func (e *env) storeOf(t *testing.T) string {
	t.Helper()
	m, _ := filepath.Glob(filepath.Join(e.home, ".local/share/stockade/engine/proj-*"))
	if len(m) != 1 {
		t.Fatalf("engine storages %q, want one for the project", m)
	}
	return m[0]
}

// removeStore removes the storage the way the README says, and checks
// that it is gone: an unprivileged user cannot rm -rf files the engine
// owns by subordinate ids.
func removeStore(t *testing.T, dir string) {
	t.Helper()
	cmd := exec.Command("sh", "-c", `cd / && if [ "$(id -u)" = 0 ]; then rm -rf "$1"; else podman unshare rm -rf "$1"; fi`, "sh", dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("removing %s: %v: %s", dir, err, out)
	}
	if _, err := os.Lstat(dir); err == nil {
		t.Errorf("%s is still there after the README's removal", dir)
	}
}

// TestContainersStorePersists: what the engine stored in one session (an
// image, containers) is there in the next session of the project, and not
// in another project's or with --containers-storage session; a container
// made in the first session is judged again by the hooks when the second
// starts it, and one left running is removed; a build finds its cache; the storage is the user's, 0700, and holds nothing the
// command could reach.
func TestContainersStorePersists(t *testing.T) {
	requireContainers(t)
	e := newEnv(t)
	res := e.runCtr(2*time.Minute, "run", "--log-level", "error", "--containers", "--", "sh", "-c", importImage+
		`podman --remote create --name good img echo good-again >/dev/null && `+
		`podman --remote create --name bad --cap-add ALL img echo bad-ran >/dev/null && `+
		`podman --remote run -d --name left img nc -l -p 9999 >/dev/null && `+
		`mkdir ctx && printf 'FROM localhost/img\nRUN echo built >/built\n' >ctx/Containerfile && `+
		`podman --remote build -q --network none -t built ctx >/dev/null && echo made`)
	if res.code != 0 || strings.TrimSpace(res.stdout) != "made" {
		t.Fatalf("first session: %q (exit %d)\nstderr: %s", res.stdout, res.code, res.stderr)
	}
	store := e.storeOf(t)
	fi, err := os.Stat(store)
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); fi.Mode().Perm() != 0o700 || int(st.Uid) != os.Getuid() {
		t.Errorf("%s: mode %v owner %d, want 0700 and %d", store, fi.Mode().Perm(), st.Uid, os.Getuid())
	}
	res = e.runCtr(2*time.Minute, "run", "--log-level", "error", "--containers", "--", "sh", "-c",
		`podman --remote images --format '{{.Repository}}' | sort; podman --remote start -a good; `+
			`podman --remote start -a bad 2>&1 | grep -o 'stockade refused the container (check [a-z_]*)' | head -n 1; `+
			`podman --remote rm -f left >/dev/null && echo left-removed; `+
			`podman --remote build --network none -t built ctx 2>&1 | grep -c 'Using cache'`)
	// A container left running by the first session's end: the engine
	// finds it stopped (its run root, with its state, went with the
	// session) and removes it.
	want := "localhost/built\nlocalhost/img\ngood-again\nstockade refused the container (check capabilities)\nleft-removed\n1"
	if res.code != 0 || strings.TrimSpace(res.stdout) != want {
		t.Fatalf("second session: %q (exit %d), want %q\nstderr: %s", res.stdout, res.code, want, res.stderr)
	}
	// The facts are the starting session's: under --require-digest a
	// container made from a tag in an earlier session is refused (with
	// the project's storage asked for: --require-digest alone gives the
	// session its own, below, and keeping the project's is a loosening).
	res = e.runCtr(time.Minute, "run", "--log-level", "error", "--containers", "--require-digest", "--containers-storage", "project", "--", "sh", "-c",
		`podman --remote start -a good 2>&1 | grep -o 'stockade refused the container (check [a-z_]*)' | head -n 1`)
	if want := "stockade refused the container (check image)"; res.code != 0 || strings.TrimSpace(res.stdout) != want {
		t.Errorf("--require-digest session: %q (exit %d), want %q\nstderr: %s", res.stdout, res.code, want, res.stderr)
	}
	if want := "stockade: LOOSENED: containers_storage project with require_digest: "; !strings.Contains(res.stderr, want) {
		t.Errorf("--require-digest --containers-storage project: stderr %q, want a line with %q", res.stderr, want)
	}
	res = e.runCtr(time.Minute, "run", "--log-level", "error", "--containers", "--require-digest", "--", "sh", "-c",
		`podman --remote images -q | wc -l`)
	if res.code != 0 || strings.TrimSpace(res.stdout) != "0" {
		t.Errorf("--require-digest: %q images (exit %d), want 0: its own storage\nstderr: %s", res.stdout, res.code, res.stderr)
	}
	// A session storage sees none of it and leaves it as it is.
	res = e.runCtr(time.Minute, "run", "--log-level", "error", "--containers", "--containers-storage", "session", "--", "sh", "-c",
		`podman --remote images -q | wc -l`)
	if res.code != 0 || strings.TrimSpace(res.stdout) != "0" {
		t.Errorf("--containers-storage session: %q images (exit %d), want 0\nstderr: %s", res.stdout, res.code, res.stderr)
	}
	// Another project has its own.
	other := filepath.Join(e.home, "other")
	if err := os.Mkdir(other, 0o755); err != nil {
		t.Fatal(err)
	}
	res = e.runCtr(time.Minute, "run", "--log-level", "error", "--workdir", other, "--containers", "--", "sh", "-c", `podman --remote images -q | wc -l`)
	if res.code != 0 || strings.TrimSpace(res.stdout) != "0" {
		t.Errorf("another project: %q images (exit %d), want 0\nstderr: %s", res.stdout, res.code, res.stderr)
	}
	if m, _ := filepath.Glob(filepath.Join(e.home, ".local/share/stockade/engine/other-*")); len(m) != 1 {
		t.Errorf("another project's storages: %q, want one", m)
	}
}

// TestContainersStoreConcurrent: a second session of the project while
// the first runs gets a storage of its own, says so, and works; the
// project's storage is whole after both.
func TestContainersStoreConcurrent(t *testing.T) {
	requireContainers(t)
	e := newEnv(t)
	started, done := filepath.Join(e.workdir, "started"), filepath.Join(e.workdir, "done")
	for _, p := range []string{started, done} {
		if err := syscall.Mkfifo(p, 0o666); err != nil {
			t.Fatal(err)
		}
	}
	first := make(chan result, 1)
	go func() {
		first <- e.runCtr(2*time.Minute, "run", "--log-level", "error", "--containers", "--", "sh", "-c", importImage+
			`echo up >started; read x <done; podman --remote run --rm img echo first-works; podman --remote images --format '{{.Repository}}'`)
	}()
	f, err := os.Open(started) // blocks until the first session's engine has the image
	if err != nil {
		t.Fatal(err)
	}
	// Read the line before closing: a writer that finds no reader any
	// more dies of SIGPIPE.
	if line, _ := bufio.NewReader(f).ReadString('\n'); line != "up\n" {
		f.Close()
		t.Fatalf("the first session said %q, not up: %+v", line, <-first)
	}
	f.Close()
	second := e.runCtr(2*time.Minute, "run", "--log-level", "warn", "--containers", "--", "sh", "-c", importImage+
		`podman --remote run --rm img echo second-works`)
	// The first session reads done, unless it has ended meanwhile.
	var r1 result
	for waiting := true; waiting; {
		select {
		case r1 = <-first:
			waiting = false
		default:
			if w, err := os.OpenFile(done, os.O_WRONLY|syscall.O_NONBLOCK, 0); err == nil {
				w.WriteString("done\n")
				w.Close()
				r1, waiting = <-first, false
			} else {
				time.Sleep(20 * time.Millisecond)
			}
		}
	}
	if second.code != 0 || strings.TrimSpace(second.stdout) != "second-works" || !strings.Contains(second.stderr, "another session of this project holds its container storage") {
		t.Errorf("second session: %q (exit %d), want second-works and the notice\nstderr: %s", second.stdout, second.code, second.stderr)
	}
	if r1.code != 0 || strings.TrimSpace(r1.stdout) != "first-works\nlocalhost/img" {
		t.Errorf("first session: %q (exit %d)\nstderr: %s", r1.stdout, r1.code, r1.stderr)
	}
	res := e.runCtr(2*time.Minute, "run", "--log-level", "warn", "--containers", "--", "sh", "-c",
		`podman --remote run --rm img echo third-works`)
	if res.code != 0 || strings.TrimSpace(res.stdout) != "third-works" || strings.Contains(res.stderr, "another session") {
		t.Errorf("after both: %q (exit %d), want third-works from the kept image\nstderr: %s", res.stdout, res.code, res.stderr)
	}
}

// TestContainersStoreKill: the storage's lock dies with the
// supervisor that held it, killed, and its sandbox with it: the next
// session has the project's storage, whole.
func TestContainersStoreKill(t *testing.T) {
	requireContainers(t)
	e := newEnv(t)
	e.stopSessions()
	res := e.runCtr(2*time.Minute, "run", "--log-level", "error", "--containers", "--", "sh", "-c", importImage+`echo imported`)
	if res.code != 0 || strings.TrimSpace(res.stdout) != "imported" {
		t.Fatalf("first session: %q (exit %d)\nstderr: %s", res.stdout, res.code, res.stderr)
	}
	r := e.run("", nil, "run", "-d", "--log-level", "error", "--containers", "--", "sleep", "1000")
	id := strings.TrimSpace(r.stdout)
	if r.code != 0 || len(id) != 6 {
		t.Fatalf("run -d: exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
	}
	var pid int
	for _, s := range e.list(false) {
		if s.ID == id {
			pid = s.PID
		}
	}
	if pid <= 0 {
		t.Fatalf("session %s has no supervisor pid in the list", id)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for syscall.Kill(pid, 0) == nil && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	res = e.runCtr(2*time.Minute, "run", "--log-level", "warn", "--containers", "--", "sh", "-c", `podman --remote run --rm img echo kept`)
	if res.code != 0 || strings.TrimSpace(res.stdout) != "kept" || strings.Contains(res.stderr, "another session") {
		t.Errorf("after the kill: %q (exit %d), want kept from the project's storage\nstderr: %s", res.stdout, res.code, res.stderr)
	}
}
