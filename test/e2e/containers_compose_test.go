package e2e

// docker compose against the engine of `stockade run --containers`:
// Debian's docker-compose (1.29, which speaks the Docker API as the docker
// CLI does), a stack of two services on the network compose makes for it.
// The escape battery has the services that ask for the host
// (test/escape/rows_containers_compose_test.go).

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stockade-dev/stockade/internal/testenv"
)

// requireCompose skips (fails with STOCKADE_MUST_WORK=1) without
// docker-compose or an engine.
func requireCompose(t *testing.T) {
	t.Helper()
	requireContainers(t)
	if _, err := exec.LookPath("docker-compose"); err != nil {
		testenv.SkipOrFail(t, "%v (scripts/test.sh installs docker-compose)", err)
	}
}

// composeImage is importImage with the applets the stack's services run.
const composeImage = `set -e; d=$(mktemp -d); mkdir $d/bin; cp /bin/busybox $d/bin/; ` +
	`for c in sh echo nc true cat seq usleep; do ln -s busybox $d/bin/$c; done; ` +
	`tar -C $d -cf $d.tar .; podman --remote import -q $d.tar img >/dev/null; set +e; `

// composeStack: web answers on 8080 and publishes it on the sandbox's
// 127.0.0.1; client reaches it by its service name over the stack's own
// network (the engine's DNS for it, aardvark-dns) and writes what it got
// into a bind of the project directory and a named volume.
const composeStack = `version: "3"
services:
  web:
    image: img
    command: ["sh", "-c", "while :; do echo hello-from-web | nc -l -p 8080; done"]
    ports: ["127.0.0.1:18080:8080"]
  client:
    image: img
    depends_on: [web]
    volumes: ["./out:/out", "data:/data"]
    command: ["sh", "-c", "for i in $$(seq 100); do l=$$(nc web 8080 </dev/null 2>/dev/null) && [ -n \"$$l\" ] && { echo \"client got $$l\" | tee /out/got /data/got; exit 0; }; usleep 100000; done; echo NOANSWER; exit 1"]
volumes:
  data:
`

// composeScript drives the stack's life: up, ps, the client's exit status
// and logs, exec, run with the named volume, the published port from the
// sandbox, down, and what is left after it. Each step prints one line the
// test compares.
const composeScript = composeImage + `mkdir out
docker-compose -p stk up -d >/dev/null 2>up.err; echo "up $?"
docker-compose -p stk ps web | grep -q ' Up ' && echo "web Up"
echo "client exit $(docker wait stk_client_1)"
docker-compose -p stk logs --no-color client | grep -o 'client got .*' | head -n 1
docker-compose -p stk exec -T web echo exec-works
docker-compose -p stk run --rm -T client cat /data/got 2>/dev/null | sed 's/^/volume /'
get() { for i in $(seq 100); do l=$(busybox nc 127.0.0.1 $1 </dev/null 2>/dev/null) && [ -n "$l" ] && { echo "$l"; return; }; busybox usleep 100000; done; echo "NOANSWER $1"; }
echo "port $(get 18080)"
docker-compose -p stk down -v >/dev/null 2>down.err; echo "down $?"
echo "left $(docker ps -aq | wc -l) containers, $(docker network ls -q --filter name=stk_default | wc -l) networks, $(docker volume ls -q | wc -l) volumes"
`

// TestContainersCompose: a compose stack starts, its services reach each
// other by name, its port answers in the sandbox, and down removes it all;
// the file the client wrote through its bind is the user's.
func TestContainersCompose(t *testing.T) {
	requireCompose(t)
	e := newEnv(t)
	e.write("docker-compose.yml", composeStack)
	res := e.runCtr(3*time.Minute, "run", "--log-level", "error", "--containers", "--", "sh", "-c", composeScript)
	want := strings.Join([]string{
		"up 0",
		"web Up",
		"client exit 0",
		"client got hello-from-web",
		"exec-works",
		"volume client got hello-from-web",
		"port hello-from-web",
		"down 0",
		"left 0 containers, 0 networks, 0 volumes",
	}, "\n")
	if got := strings.TrimSpace(res.stdout); res.code != 0 || got != want {
		up, _ := os.ReadFile(filepath.Join(e.workdir, "up.err"))
		down, _ := os.ReadFile(filepath.Join(e.workdir, "down.err"))
		t.Fatalf("got (exit %d):\n%s\nwant:\n%s\nstderr: %s\nup: %s\ndown: %s", res.code, got, want, res.stderr, up, down)
	}
	p := filepath.Join(e.workdir, "out", "got")
	b, err := os.ReadFile(p)
	if err != nil || strings.TrimSpace(string(b)) != "client got hello-from-web" {
		t.Fatalf("%s: %q, %v", p, b, err)
	}
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	if uid := fi.Sys().(*syscall.Stat_t).Uid; int(uid) != os.Getuid() {
		t.Errorf("%s is owned by uid %d, not by the user (%d)", p, uid, os.Getuid())
	}
}
