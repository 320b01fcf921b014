package e2e

// The preset rows point the hosts of every ecosystem preset at the test
// host: `stockade run --resolver 127.0.0.1:PORT` asks a DNS server this
// test runs, which answers each preset host (and a few outside them) with
// 198.51.100.10, where scripts/testnet.sh serves HTTP and HTTPS (a
// self-signed certificate, hence curl -k; the package managers of
// preset_client_test.go are given it as their CA), and nothing else. No
// name resolves anywhere real and no packet leaves for the Internet.

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/dns/dnsmessage"

	"github.com/stockade-dev/stockade/internal/egress"
	"github.com/stockade-dev/stockade/internal/testenv"
)

// outsiders resolve to the test host too, but no preset names them: a
// preset must not let them through. Each is a neighbour a client might
// also reach for (publishing, the web API).
var outsiders = []string{"upload.pypi.org", "crates.io", "gist.github.com", "example.com"}

// presetDNS serves A records for names, all 198.51.100.10, on
// 127.0.0.1 over UDP until the test ends; other names are NXDOMAIN.
func presetDNS(t *testing.T, names []string) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	known := map[string]bool{}
	for _, n := range names {
		known[n+"."] = true
	}
	go func() {
		buf := make([]byte, 1500)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			var p dnsmessage.Parser
			h, err := p.Start(buf[:n])
			if err != nil {
				continue
			}
			q, err := p.Question()
			if err != nil {
				continue
			}
			name := strings.ToLower(q.Name.String())
			rh := dnsmessage.Header{ID: h.ID, Response: true, Authoritative: true, RecursionAvailable: true}
			if !known[name] {
				rh.RCode = dnsmessage.RCodeNameError
			}
			b := dnsmessage.NewBuilder(nil, rh)
			b.EnableCompression()
			b.StartQuestions()
			b.Question(q)
			b.StartAnswers()
			if known[name] && q.Type == dnsmessage.TypeA {
				b.AResource(dnsmessage.ResourceHeader{Name: q.Name, Type: dnsmessage.TypeA, Class: dnsmessage.ClassINET, TTL: 60},
					dnsmessage.AResource{A: [4]byte{198, 51, 100, 10}})
			}
			if msg, err := b.Finish(); err == nil {
				pc.WriteTo(msg, from)
			}
		}
	}()
	return pc.LocalAddr().String()
}

// presetHostNames are every host of every preset, and the outsiders.
func presetHostNames(t *testing.T) []string {
	names := append([]string{}, outsiders...)
	for _, p := range egress.Presets() {
		for _, r := range p.Rules() {
			names = append(names, r.Name)
		}
	}
	return names
}

// fetchLine is a script fragment that prints "URL CODE" for one fetch, the
// CONNECT status when the tunnel was refused.
func fetchLine(url string) string {
	return `w=$(curl -sSk -o /tmp/body -w "%{http_code} %{http_connect}" ` + url + ` 2>/dev/null); set -- $w
c=$1; [ "$c" = 000 ] && c=$2; grep -q "hello from the test host" /tmp/body 2>/dev/null || c="$c-nohello"; echo "` + url + ` $c"; rm -f /tmp/body
`
}

// TestNetworkPresets: with --agent-allow @NAME, every host of the preset is
// reached through the proxy on its port (curl, as a client would), while
// its other port and hosts outside it are refused; @npm, @pypi, @go and
// @crates also with their standard clients.
func TestNetworkPresets(t *testing.T) {
	requireSandbox(t)
	requireTestnet(t)
	dns := presetDNS(t, presetHostNames(t))
	for _, p := range egress.Presets() {
		t.Run(p.Name, func(t *testing.T) {
			var script strings.Builder
			want := map[string]string{}
			for _, r := range p.Rules() {
				https, http := fmt.Sprintf("https://%s/", r.Name), fmt.Sprintf("http://%s/", r.Name)
				url := https
				if r.Port == 80 {
					url = http
				} else if _, set := want[http]; !set {
					// Only the preset's port: plain HTTP to a 443 host is
					// refused (unless the preset names port 80 too).
					want[http] = "403-nohello"
				}
				want[url] = "200"
			}
			for _, o := range outsiders {
				want["https://"+o+"/"] = "403-nohello"
			}
			for url := range want {
				script.WriteString(fetchLine(url))
			}
			e := newEnv(t)
			res := e.run("", nil, "run", "--log-level", "error", "--resolver", dns, "--agent-allow", "@"+p.Name,
				"--", "sh", "-c", script.String())
			if res.code != 0 {
				t.Fatalf("exit %d\nstdout: %s\nstderr: %s", res.code, res.stdout, res.stderr)
			}
			got := map[string]string{}
			for _, line := range strings.Split(strings.TrimSpace(res.stdout), "\n") {
				url, code, _ := strings.Cut(line, " ")
				got[url] = code
			}
			for url, w := range want {
				if got[url] != w {
					t.Errorf("%s: %q, want %q (200: reached the test host; 403: refused by the proxy)\n%s", url, got[url], w, res.stdout)
				}
			}
		})
	}
	// The standard client: npm view through HTTPS_PROXY to its default
	// registry host. The test host's certificate is self-signed, so
	// strict-ssl is off; what is checked is the proxy's decision on
	// registry.npmjs.org:443, which does not look inside the tunnel.
	t.Run("npm_view", func(t *testing.T) {
		if _, err := os.Stat("/usr/bin/npm"); err != nil {
			testenv.SkipOrFail(t, "npm is not installed (Debian: npm; scripts/test.sh installs it)")
		}
		e := newEnv(t)
		res := e.run("", nil, "run", "--log-level", "error", "--resolver", dns, "--agent-allow", "@npm", "--", "sh", "-c",
			`npm view stockade-probe version --registry https://registry.npmjs.org/registry/ --strict-ssl=false 2>&1`)
		if res.code != 0 || strings.TrimSpace(res.stdout) != "1.2.3" {
			t.Fatalf("npm view: exit %d, %q, want 1.2.3\n%s", res.code, res.stdout, res.stderr)
		}
	})
	// The other standard clients, with TLS verified, and refused without
	// any one host of their preset (preset_client_test.go).
	for _, c := range presetClients {
		t.Run(c.name, func(t *testing.T) { testPresetClient(t, dns, c) })
	}
}

// TestNetworkPresetRuntime: `stockade network agent allow -s ID @npm` opens
// the preset's hosts to a running session, from its next connection.
func TestNetworkPresetRuntime(t *testing.T) {
	requireSandbox(t)
	requireTestnet(t)
	dns := presetDNS(t, presetHostNames(t))
	e := newEnv(t)
	// before: refused; then wait for the test's go file; after: allowed.
	script := "{ " + fetchLine("https://registry.npmjs.org/") + `} > before.tmp; mv before.tmp before
i=0; while [ ! -e go ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done
{ ` + fetchLine("https://registry.npmjs.org/") + `} > after.tmp; mv after.tmp after`
	r := e.run("", nil, "run", "-d", "--log-level", "error", "--resolver", dns, "--", "sh", "-c", script)
	id := strings.TrimSpace(r.stdout)
	if r.code != 0 || id == "" {
		t.Fatalf("run -d: exit %d %q\n%s", r.code, r.stdout, r.stderr)
	}
	defer e.run("", nil, "stop", "-s", id)
	read := func(name string) string {
		// Files written inside; no event reaches us, so poll, bounded.
		for deadline := time.Now().Add(60 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if b, err := os.ReadFile(filepath.Join(e.workdir, name)); err == nil {
				return strings.TrimSpace(string(b))
			}
		}
		t.Fatalf("%s was not written within 60 s\n%s", name, e.run("", nil, "logs", "-s", id).stdout)
		return ""
	}
	if got := read("before"); got != "https://registry.npmjs.org/ 403-nohello" {
		t.Errorf("before the rule: %q, want a 403", got)
	}
	allow := e.run("", nil, "network", "agent", "allow", "-s", id, "@npm")
	if allow.code != 0 || !strings.Contains(allow.stdout, "registry.npmjs.org:443") || !strings.Contains(allow.stdout, "LOOSENED: npm publish") {
		t.Fatalf("network agent allow @npm: exit %d\n%s%s", allow.code, allow.stdout, allow.stderr)
	}
	bad := e.run("", nil, "network", "agent", "allow", "-s", id, "@nmp")
	if bad.code == 0 || !strings.Contains(bad.stderr, `"@nmp" is not a network rule: no such preset; write one of @crates`) {
		t.Errorf("network agent allow @nmp: exit %d\n%s%s", bad.code, bad.stdout, bad.stderr)
	}
	if err := os.WriteFile(filepath.Join(e.workdir, "go"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := read("after"); got != "https://registry.npmjs.org/ 200" {
		t.Errorf("after the rule: %q, want 200", got)
	}
}
