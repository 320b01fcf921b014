package e2e

// The standard client of a preset, run in the sandbox under
// --agent-allow @NAME and presetDNS, fetches the package the test host
// serves on the preset's hosts (test/netenv/server, packages.go), with
// TLS verified: the test reads the test host's certificate from a
// handshake and gives it to the client as its only CA. Run again with
// each host of the preset left out, the client fails and the proxy
// records the refusal of that host: every host is needed, and the preset
// is enough.

import (
	"crypto/tls"
	"encoding/json"
	"encoding/pem"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stockade-dev/stockade/internal/egress"
	"github.com/stockade-dev/stockade/internal/testenv"
	"github.com/stockade-dev/stockade/test/netenv/testhost"
)

// presetClient is one package manager's client and what it runs.
type presetClient struct {
	name   string // of the subtest
	preset string // without the @
	bin    string // the client; missing, the test skips (fails with STOCKADE_MUST_WORK=1)
	pkg    string // where bin comes from, for that message
	// script runs in the workdir, which holds ca.pem (the test host's
	// certificate) and whatever prepare writes; it prints
	// testhost.ProbeVersion, and nothing else, to stdout once the package
	// is fetched.
	script  string
	prepare func(t *testing.T, workdir string)
}

// presetClients are the clients run against the test host. Each is given
// what keeps it off the host's configuration and caches (the workdir
// holds them) and no retries, so that a refusal fails at once. @npm's
// npm is TestNetworkPresets/npm_view; cargo is Debian's (0.66, Rust
// 1.65), which speaks the sparse protocol only with -Z sparse-registry,
// hence RUSTC_BOOTSTRAP=1 (from cargo 1.68 the sparse index is the
// default and the flag a no-op).
var presetClients = []presetClient{
	{name: "pip_install", preset: "pypi", bin: "/usr/bin/pip3", pkg: "python3-pip",
		script: `export PIP_CONFIG_FILE=/dev/null
/usr/bin/pip3 install --disable-pip-version-check --no-cache-dir --retries 0 --timeout 20 --root-user-action=ignore \
	--cert ca.pem --target site ` + testhost.PyPIProject + ` >&2 &&
PYTHONPATH=site /usr/bin/python3 -c 'import stockade_probe; print(stockade_probe.VERSION)'`},
	{name: "go_mod_download", preset: "go", bin: goBin(), pkg: "Go from go.dev/dl",
		script: `export GOPATH=$PWD/gopath GOCACHE=$PWD/gocache GOFLAGS=-modcacherw GOTOOLCHAIN=local \
	SSL_CERT_FILE=$PWD/ca.pem GOSUMDB="$(cat gosumdb.vkey)"
` + goBin() + ` mod download -x ` + testhost.GoModule + `@v` + testhost.ProbeVersion + ` >&2 &&
cat "$GOPATH/pkg/mod/` + testhost.GoModule + `@v` + testhost.ProbeVersion + `/VERSION"`,
		prepare: writeGoSumDBKey},
	{name: "cargo_fetch", preset: "crates", bin: "/usr/bin/cargo", pkg: "cargo",
		script: `export CARGO_HOME=$PWD/cargo-home CARGO_HTTP_CAINFO=$PWD/ca.pem CARGO_NET_RETRY=0 RUSTC_BOOTSTRAP=1
mkdir -p app/src && : >app/src/lib.rs &&
printf '[package]\nname = "app"\nversion = "0.1.0"\nedition = "2021"\n\n[dependencies]\n` + testhost.Crate + ` = "=` + testhost.ProbeVersion + `"\n' >app/Cargo.toml &&
(cd app && /usr/bin/cargo -Z sparse-registry fetch) >&2 &&
cat "$CARGO_HOME"/registry/src/*/` + testhost.Crate + `-` + testhost.ProbeVersion + `/VERSION`},
}

// goBin is the go command of the machine, by an absolute path (the
// sandbox's PATH lacks /usr/local/go/bin); "" when there is none.
func goBin() string {
	p, err := exec.LookPath("go")
	if err != nil {
		return ""
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return ""
	}
	return abs
}

// testPresetClient runs c with its preset, and then once without each of
// the preset's hosts.
func testPresetClient(t *testing.T, dns string, c presetClient) {
	if _, err := os.Stat(c.bin); c.bin == "" || err != nil {
		testenv.SkipOrFail(t, "the client of @%s (%s) is not installed (%s; scripts/test.sh installs it)", c.preset, c.bin, c.pkg)
	}
	p, ok := egress.LookupPreset("@" + c.preset)
	if !ok {
		t.Fatalf("no preset @%s", c.preset)
	}
	ca := testHostCA(t, p)
	t.Run("@"+c.preset, func(t *testing.T) {
		res, reached, refused := c.run(t, dns, ca, []string{"@" + c.preset})
		if res.code != 0 || strings.TrimSpace(res.stdout) != testhost.ProbeVersion || len(refused) > 0 {
			t.Fatalf("exit %d, %q, want %s; refused %v\nstderr: %s", res.code, res.stdout, testhost.ProbeVersion, refused, res.stderr)
		}
		var want []string
		for _, r := range p.Rules() {
			want = append(want, r.Name)
		}
		slices.Sort(want)
		if !slices.Equal(reached, want) {
			t.Errorf("the client reached %v, want every host of @%s: %v\nstderr: %s", reached, c.preset, want, res.stderr)
		}
	})
	for i, left := range p.Rules() {
		t.Run("without_"+left.Name, func(t *testing.T) {
			var allow []string
			for j, r := range p.Rules() {
				if j != i {
					allow = append(allow, r.String())
				}
			}
			res, _, refused := c.run(t, dns, ca, allow)
			if res.code == 0 || strings.TrimSpace(res.stdout) == testhost.ProbeVersion || !slices.Contains(refused, left.Name) {
				t.Fatalf("exit %d, %q, refused %v: want the client to fail, refused at %s\nstderr: %s",
					res.code, res.stdout, refused, left.Name, res.stderr)
			}
		})
	}
}

// run runs c's script in a new session under --agent-allow for each of
// allow, and returns its result and, from the audit log, the hosts the
// proxy let through and those it refused, each sorted, without repeats.
func (c presetClient) run(t *testing.T, dns string, ca []byte, allow []string) (res result, reached, refused []string) {
	t.Helper()
	e := newEnv(t)
	e.write("ca.pem", string(ca))
	if c.prepare != nil {
		c.prepare(t, e.workdir)
	}
	args := []string{"run", "--log-level", "error", "--resolver", dns}
	for _, a := range allow {
		args = append(args, "--agent-allow", a)
	}
	res = e.run("", nil, append(args, "--", "sh", "-c", c.script)...)
	runs := e.list(true)
	if len(runs) != 1 {
		t.Fatalf("list --all: %+v", runs)
	}
	logs := e.run("", nil, "logs", "-s", runs[0].ID, "--json")
	for _, line := range strings.Split(strings.TrimSpace(logs.stdout), "\n") {
		var ev struct{ Event, Host string }
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("logs --json: %v: %q", err, line)
		}
		switch ev.Event {
		case egress.EventConnection:
			reached = append(reached, ev.Host)
		case egress.EventNetworkDenied:
			refused = append(refused, ev.Host)
		}
	}
	slices.Sort(reached)
	slices.Sort(refused)
	return res, slices.Compact(reached), slices.Compact(refused)
}

// testHostCA is the certificate the test host serves on 443, in PEM: the
// clients' only CA. It must name every host of p: an older server's
// certificate does not, and would fail the client with a less clear line.
func testHostCA(t *testing.T, p egress.Preset) []byte {
	t.Helper()
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 5 * time.Second}, "tcp", net.JoinHostPort(testhost.Addr, "443"),
		&tls.Config{InsecureSkipVerify: true}) // read, not trusted: it becomes the trust
	if err != nil {
		t.Fatalf("reading the test host's certificate: %v", err)
	}
	defer conn.Close()
	cert := conn.ConnectionState().PeerCertificates[0]
	for _, r := range p.Rules() {
		if err := cert.VerifyHostname(r.Name); err != nil {
			t.Fatalf("the test host's certificate: %v; the test network runs an older server (as root: scripts/testnet.sh down; scripts/testnet.sh up)", err)
		}
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw})
}

// writeGoSumDBKey writes the key of the test host's checksum database as
// gosumdb.vkey, for GOSUMDB.
func writeGoSumDBKey(t *testing.T, workdir string) {
	t.Helper()
	client := &http.Client{Transport: &http.Transport{Proxy: nil}, Timeout: 5 * time.Second}
	resp, err := client.Get("http://" + testhost.Addr + testhost.GoSumDBKeyPath)
	if err != nil {
		t.Fatalf("reading the test host's checksum database key: %v", err)
	}
	defer resp.Body.Close()
	key, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK || !strings.HasPrefix(string(key), "sum.golang.org+") {
		t.Fatalf("reading the test host's checksum database key: %s %q %v; the test network runs an older server (as root: scripts/testnet.sh down; scripts/testnet.sh up)",
			resp.Status, key, err)
	}
	if err := os.WriteFile(filepath.Join(workdir, "gosumdb.vkey"), key, 0o644); err != nil {
		t.Fatal(err)
	}
}
