package e2e

// Transparent capture: in --network proxy every TCP connection to a
// non-loopback address reaches the supervisor and is decided by the agent
// policy, whatever the program does with the proxy variables (package
// capture; docs/egress.md). Each client here runs with the proxy variables
// unset, or ignores them (Node's fetch, a Go program with its own
// transport).

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// noProxy unsets every proxy variable before script.
const noProxy = "unset HTTP_PROXY HTTPS_PROXY http_proxy https_proxy ALL_PROXY all_proxy; "

// goClientVar makes the test binary a Go HTTP client (goClient): the Go
// program of the capture rows, copied into the project by withGoClient.
const goClientVar = "STOCKADE_E2E_GOCLIENT"

// goClient fetches url with a transport that never uses a proxy, and prints
// the status and the body, or the error's errno name.
func goClient(url string) int {
	c := http.Client{Timeout: 20 * time.Second, Transport: &http.Transport{
		Proxy:           nil,
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // the test host's own certificate
	}}
	r, err := c.Get(url)
	if err != nil {
		var errno syscall.Errno
		switch {
		case errors.As(err, &errno):
			fmt.Println(errnoName(errno))
		case errors.Is(err, io.EOF):
			fmt.Println("EOF")
		default:
			fmt.Println("ERR", err)
		}
		return 0
	}
	defer r.Body.Close()
	b, _ := io.ReadAll(r.Body)
	fmt.Printf("%d\n%s", r.StatusCode, b)
	return 0
}

func errnoName(e syscall.Errno) string {
	switch e {
	case syscall.ECONNRESET:
		return "ECONNRESET"
	case syscall.ECONNREFUSED:
		return "ECONNREFUSED"
	case syscall.ENETUNREACH:
		return "ENETUNREACH"
	}
	return e.Error()
}

// withGoClient copies the test binary into the project as ./goclient.
func withGoClient(e *env) {
	self, err := os.Executable()
	if err != nil {
		e.t.Fatal(err)
	}
	b, err := os.ReadFile(self)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(e.workdir, "goclient"), b, 0o755); err != nil {
		e.t.Fatal(err)
	}
}

func goGet(url string) string { return noProxy + goClientVar + "=1 ./goclient " + url }

// nodeFetch fetches url with Node's built-in fetch, which reads no proxy
// variable, and prints the status and the body, or the error's code.
func nodeFetch(url string) string {
	return `NODE_TLS_REJECT_UNAUTHORIZED=0 node -e 'fetch(process.argv[1]).then(async r => console.log(r.status + "\n" + await r.text()),
  e => console.log((e.cause && e.cause.code) || String(e)))' ` + url + ` 2>/dev/null`
}

// echo connects to host:port directly, sends a line and prints what comes
// back, or the errno name of the failure.
func echo(host string, port int) string {
	return fmt.Sprintf(`python3 -c 'import errno, socket
try:
    s = socket.create_connection(("%s", %d), 5); s.settimeout(10); s.sendall(b"ping\n")
    print(s.recv(100).decode().strip() or "EOF")
except OSError as e: print(errno.errorcode.get(e.errno, str(e)))'`, host, port)
}

func needNode() string {
	if _, err := exec.LookPath("node"); err != nil {
		return "node is not installed (Debian: nodejs; scripts/test.sh installs it)"
	}
	return ""
}

var captureRows = []netRow{
	// A name the connection carries decides: the Host of plain HTTP, the
	// server name of a TLS ClientHello.
	{name: "capture_http_host", flags: allow("allowed.test"), script: noProxy + curl("http://allowed.test/"), want: "200", body: []string{hello}},
	{name: "capture_https_sni", flags: allow("allowed.test"), script: noProxy + curl("-k https://allowed.test/"), want: "200", body: []string{hello}},
	{name: "capture_host_denied", flags: allow("allowed.test"),
		script: noProxy + curl("--resolve other.test:80:198.51.100.10 http://other.test/"), want: "403",
		body: []string{"host: other.test", " other.test\n"}},
	// The address is allowed.test's, as the stub answered; the server
	// name the client sends is not allowed, and it decides.
	{name: "capture_sni_denied", flags: allow("allowed.test"),
		script: noProxy + "getent hosts allowed.test >/dev/null; " + curl("-k --resolve other.test:443:198.51.100.10 https://other.test/"), want: "EXIT35"},
	{name: "capture_ip_literal_needs_ip_rule", flags: allow("allowed.test"), script: noProxy + curl("http://198.51.100.10/"), want: "403",
		body: []string{"host: 198.51.100.10"}},
	{name: "capture_ip_rule", flags: allow("198.51.100.10:80"), script: noProxy + curl("http://198.51.100.10/"), want: "200", body: []string{hello}},
	// Raw TCP names nothing: the name the stub answered the address for
	// decides, else the address.
	{name: "capture_raw_tcp_dns_name", flags: allow("echo.test"), script: echo("echo.test", 7), want: "ping"},
	{name: "capture_raw_tcp_port_rule", flags: allow("echo.test:80"), script: echo("echo.test", 7), want: "ECONNRESET"},
	{name: "capture_raw_tcp_denied", flags: allow("allowed.test"), script: echo("198.51.100.20", 7), want: "ECONNRESET"},
	{name: "capture_raw_tcp_ip_rule", flags: allow("198.51.100.20:7"), script: echo("198.51.100.20", 7), want: "ping"},
	{name: "capture_raw_tcp_allow_mode", flags: allowMode, script: echo("198.51.100.20", 7), want: "ping"},
	// UDP other than DNS to the stub goes nowhere.
	{name: "capture_udp_refused", flags: allowMode, script: `python3 -c 'import errno, socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM); s.settimeout(5); s.connect(("198.51.100.53", 53))
try: s.send(b"x"); s.recv(10); print("ANSWERED")
except OSError as e: print(errno.errorcode.get(e.errno, str(e)))'`, want: "ECONNREFUSED"},
	// The floor holds for captured connections, by address and by name,
	// in every IPv6 form, in allow mode.
	{name: "capture_floor_metadata", flags: allowMode, script: noProxy + curl("http://169.254.169.254/"), want: "403", body: []string{"169.254.169.254"}},
	{name: "capture_floor_metadata_mapped", flags: allowMode, script: noProxy + curl("-g 'http://[::ffff:169.254.169.254]/'"), want: "403", body: []string{"169.254.169.254"}},
	{name: "capture_floor_metadata_nat64", flags: allowMode, script: noProxy + curl("-g 'http://[64:ff9b::a9fe:a9fe]/'"), want: "403", body: []string{"169.254.169.254"}},
	{name: "capture_floor_metadata_aws_v6", flags: allowMode, script: noProxy + curl("-g 'http://[fd00:ec2::254]/'"), want: "403", body: []string{"fd00:ec2::254"}},
	{name: "capture_floor_metadata_by_name", flags: allow("metadata.test"),
		script: noProxy + curl("--resolve metadata.test:80:169.254.169.254 http://metadata.test/"), want: "403", body: []string{"169.254.169.254"}},
	{name: "capture_floor_private_raw", flags: allowMode, script: echo("10.0.0.5", 80), want: "ECONNRESET"},
	{name: "capture_floor_host_address", flags: allowMode, script: noProxy + curl("http://198.51.100.1/"), want: "403", body: []string{"198.51.100.1"}},
	{name: "capture_ipv6_decided", flags: allow("allowed.test"), script: noProxy + curl("-g 'http://[2001:db8::1]/'"), want: "403", body: []string{"host: 2001:db8::1"}},
	// Programs that never read the proxy variables.
	{name: "capture_go_client", flags: allow("allowed.test"), setup: withGoClient, script: goGet("http://allowed.test/"), want: "200", body: []string{hello}},
	{name: "capture_go_client_tls", flags: allow("allowed.test"), setup: withGoClient, script: goGet("https://allowed.test/"), want: "200", body: []string{hello}},
	{name: "capture_go_client_denied", flags: allow("allowed.test"), setup: withGoClient, script: goGet("http://198.51.100.10/"), want: "403",
		body: []string{"host: 198.51.100.10"}},
	{name: "capture_go_client_tls_denied", flags: allow("allowed.test"), setup: withGoClient, script: goGet("https://198.51.100.10/"), want: "ECONNRESET"},
	{name: "capture_node_fetch", flags: allow("allowed.test"), needs: needNode, script: nodeFetch("http://allowed.test/"), want: "200", body: []string{hello}},
	{name: "capture_node_fetch_tls", flags: allow("allowed.test"), needs: needNode, script: nodeFetch("https://allowed.test/"), want: "200", body: []string{hello}},
	{name: "capture_node_fetch_denied", flags: allow("allowed.test"), needs: needNode, script: nodeFetch("http://198.51.100.10/"), want: "403",
		body: []string{"host: 198.51.100.10"}},
	{name: "capture_git_http_noproxy", flags: allow("allowed.test"), needs: needGitRepo,
		script: noProxy + `git clone -q http://allowed.test/repo.git /tmp/r 2>&1 && echo OK && cat /tmp/r/README`,
		want:   "OK", body: []string{"a repository on the test host"}},
}

func TestCaptureRows(t *testing.T) {
	runNetRows(t, captureRows)
}

// TestCaptureGitDaemon: git over git://, a protocol no proxy variable
// covers, to a git daemon on the host's end of the test network
// (198.51.100.1: the host's own address, in the floor, so the row needs an
// IP rule that lifts it for that address and port).
func TestCaptureGitDaemon(t *testing.T) {
	requireSandbox(t)
	requireTestnet(t)
	base := t.TempDir()
	_, gitEnv := bareRepo(t, base, "over git://")
	l, err := net.Listen("tcp", "198.51.100.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				f, err := c.(*net.TCPConn).File()
				if err != nil {
					return
				}
				defer f.Close()
				cmd := exec.Command("git", "daemon", "--inetd", "--export-all", "--base-path="+base, base)
				cmd.Env, cmd.Stdin, cmd.Stdout = gitEnv, f, f
				cmd.Run()
			}()
		}
	}()
	addr := l.Addr().String()
	clone := noProxy + "git clone -q git://" + addr + "/repo.git /tmp/r 2>&1 && git -C /tmp/r log --format=%s; echo EXIT$?"
	for _, tt := range []struct {
		name  string
		flags []string
		want  string
	}{
		{"allowed", allow(addr), "over git://"},
		{"denied", nil, "Connection reset by peer"}, // git reports it on a read or a write
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			args := append([]string{"run", "--log-level", "error", "--resolver", testnetDNS}, tt.flags...)
			res := e.run("", nil, append(args, "--", "sh", "-c", clone)...)
			if first, _, _ := strings.Cut(res.stdout, "\n"); !strings.Contains(first, tt.want) {
				t.Fatalf("got %q, want a first line with %q\nstderr: %s", res.stdout, tt.want, res.stderr)
			}
		})
	}
}

// bareRepo makes base/repo.git, a bare repository whose branch main holds
// one commit with subject msg, and returns its path and the environment
// git needs for it on the host.
func bareRepo(t *testing.T, base, msg string) (string, []string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Fatal("git is not installed")
	}
	repo := filepath.Join(base, "repo.git")
	work := filepath.Join(base, "work")
	gitEnv := append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@allowed.test",
		"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@allowed.test", "GIT_CONFIG_NOSYSTEM=1", "HOME="+base)
	for _, args := range [][]string{
		{"init", "-q", "--bare", repo},
		{"init", "-q", work},
		{"-C", work, "commit", "-q", "--allow-empty", "-m", msg},
		{"-C", work, "push", "-q", repo, "HEAD:refs/heads/main"},
		{"-C", repo, "symbolic-ref", "HEAD", "refs/heads/main"},
	} {
		cmd := exec.Command("git", args...)
		cmd.Env = gitEnv
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return repo, gitEnv
}

// TestCaptureAudit: captured connections are in the audit log with proto
// capture, where the program was going (dst) and what named it
// (name_from): a denied one named by its address, an allowed one named by
// the stub's answer.
func TestCaptureAudit(t *testing.T) {
	requireSandbox(t)
	requireTestnet(t)
	e := newEnv(t)
	r := e.run("", nil, "run", "--log-level", "error", "--resolver", testnetDNS, "--agent-allow", "echo.test",
		"--", "sh", "-c", echo("198.51.100.10", 7)+"; "+echo("echo.test", 7))
	if r.code != 0 || r.stdout != "ECONNRESET\nping\n" {
		t.Fatalf("run: exit %d %q %s", r.code, r.stdout, r.stderr)
	}
	runs := e.list(true)
	if len(runs) != 1 {
		t.Fatalf("list --all: %+v", runs)
	}
	logs := e.run("", nil, "logs", "-s", runs[0].ID, "--json").stdout
	for _, want := range []string{
		`"event":"network_denied"`, `"dst":"198.51.100.10:7"`, `"name_from":"address"`,
		`"event":"connection"`, `"dst":"198.51.100.20:7"`, `"name_from":"dns"`, `"host":"echo.test"`, `"proto":"capture"`,
	} {
		if !strings.Contains(logs, want) {
			t.Errorf("the audit log lacks %s:\n%s", want, logs)
		}
	}
}

// TestCaptureHostAddressAddedLater: an address the host gains while the
// session runs (a rotated IPv6 temporary address, a VPN, a new lease) is
// the host's too. A server on the host's wildcard address must not be
// reached through it, captured or through the HTTP proxy, in allow mode.
// (The floor took the host's addresses once, at start: the command
// reached the server.) The host is a network namespace of the test's own,
// where it can add an address without privileges.
func TestCaptureHostAddressAddedLater(t *testing.T) {
	requireSandbox(t)
	unshare, err := exec.LookPath("unshare")
	if err != nil {
		t.Fatalf("no unshare(1): %v", err)
	}
	if _, err := exec.LookPath("python3"); err != nil {
		t.Fatal("python3 is not installed")
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	script := `set -eu
ip link set lo up
export HOME=$DIR/home XDG_STATE_HOME=$DIR/home/.local/state XDG_DATA_HOME=$DIR/home/.local/share XDG_CONFIG_HOME=$DIR/home/.config
mkdir -p "$HOME/proj" && cd "$HOME/proj"
python3 -c '
import socket
s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 8765)); s.listen()
while True:
    c, _ = s.accept(); open("'"$DIR"'/reached", "a").write("x"); c.sendall(b"HOST\n"); c.close()
' & srv=$!
trap 'kill $srv' EXIT
( while [ ! -e started ]; do sleep 0.05; done; ip addr add 198.51.100.77/32 dev lo; touch added ) &
"$STOCKADE" run --log-level error --agent-policy allow -- sh -c '
touch started; while [ ! -e added ]; do sleep 0.05; done; sleep 1.5
python3 -c "
import socket
try:
    s = socket.create_connection((\"198.51.100.77\", 8765), 5); print(\"CAPTURE\", s.recv(100))
except OSError as e: print(\"CAPTURE DENIED\", e.errno)
"
curl -s -m 5 -x http://127.0.0.1:3128 http://198.51.100.77:8765/ | head -3'
`
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, unshare, "-rn", "bash", "-c", script)
	cmd.Env = append(os.Environ(), "STOCKADE="+bin, "DIR="+dir)
	out, err := cmd.CombinedOutput()
	s := string(out)
	if err != nil {
		t.Fatalf("the scenario failed: %v\n%s", err, s)
	}
	if !strings.Contains(s, "CAPTURE DENIED 104") { // ECONNRESET
		t.Errorf("a captured connection to the host's new address was not reset:\n%s", s)
	}
	if !strings.Contains(s, "an address of this host") {
		t.Errorf("the HTTP proxy did not refuse the host's new address:\n%s", s)
	}
	if _, err := os.Stat(filepath.Join(dir, "reached")); err == nil {
		t.Errorf("the host's server was reached:\n%s", s)
	}
}
