package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"time"

	"github.com/stockade-dev/stockade/internal/egress"
)

// Hello is the body of /; tests compare it exactly.
const Hello = "hello from the test host\n"

// Packument is what the registry endpoint answers for stockade-probe.
const Packument = `{"name":"stockade-probe","dist-tags":{"latest":"1.2.3"},` +
	`"versions":{"1.2.3":{"name":"stockade-probe","version":"1.2.3","description":"served by the test host",` +
	`"dist":{"tarball":"http://allowed.test/registry/stockade-probe-1.2.3.tgz","shasum":"0000000000000000000000000000000000000000"}}},` +
	`"time":{"1.2.3":"2026-01-01T00:00:00.000Z"}}`

// bigSize is the length of /big: enough for a throughput benchmark through
// the proxy, small enough for a test.
const bigSize = 64 << 20

func newHandler(repoDir string) (http.Handler, error) {
	mux := http.NewServeMux()
	mux.HandleFunc("/{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, Hello)
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		w.Header().Set("Content-Length", strconv.Itoa(bigSize))
		if r.Method != http.MethodHead {
			io.Copy(w, io.LimitReader(&pattern{}, bigSize))
		}
	})
	// A registry-like endpoint: the packument of one npm package, enough
	// for `npm view` (tarballs are not served).
	mux.HandleFunc("/registry/stockade-probe", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, Packument)
	})
	// FileServer ignores ?service=git-upload-pack, so git sees a dumb server.
	mux.Handle("/repo.git/", http.FileServer(http.Dir(repoDir)))
	// The registries of the presets, on their own names; their "/" is
	// still Hello.
	if err := handlePackages(mux); err != nil {
		return nil, err
	}
	return mux, nil
}

// pattern is an endless deterministic stream: byte i is i mod 251 (a prime,
// so that the stream does not line up with buffer sizes).
type pattern struct{ off int64 }

func (p *pattern) Read(b []byte) (int, error) {
	for i := range b {
		b[i] = byte((p.off + int64(i)) % 251)
	}
	p.off += int64(len(b))
	return len(b), nil
}

func serveHTTP(ln net.Listener, h http.Handler) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	return fmt.Errorf("http on %s: %w", ln.Addr(), srv.Serve(ln))
}

// makeRepo creates dir/repo.git, a bare repository with one commit that
// `git update-server-info` prepares for cloning over dumb HTTP.
func makeRepo(dir string) error {
	if _, err := exec.LookPath("git"); err != nil {
		return err
	}
	work := filepath.Join(dir, "work")
	if err := os.MkdirAll(work, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(work, "README"), []byte("a repository on the test host\n"), 0o644); err != nil {
		return err
	}
	bare := filepath.Join(dir, "repo.git")
	steps := [][]string{
		{"-C", work, "init", "-q", "-b", "main"},
		{"-C", work, "add", "README"},
		{"-C", work, "commit", "-q", "-m", "test host commit"},
		{"clone", "-q", "--bare", work, bare},
		{"-C", bare, "update-server-info"},
	}
	for _, args := range steps {
		cmd := exec.Command("git", args...)
		// The host's git configuration must not change the repository.
		cmd.Env = append(os.Environ(), "GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
			"GIT_AUTHOR_NAME=test", "GIT_AUTHOR_EMAIL=test@allowed.test",
			"GIT_COMMITTER_NAME=test", "GIT_COMMITTER_EMAIL=test@allowed.test")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("git %v: %w\n%s", args, err, out)
		}
	}
	return os.RemoveAll(work)
}

// selfSigned makes a certificate for the zone's names and for every host
// of every preset (which a test's resolver points here). curl skips
// verification (-k); a package manager's client is given the certificate
// as its only CA (pip --cert, SSL_CERT_FILE, CARGO_HTTP_CAINFO), which the
// test reads from the TLS handshake.
func selfSigned() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "allowed.test"},
		DNSNames:     append([]string{"allowed.test", "*.allowed.test", "other.test"}, presetHosts()...),
		IPAddresses:  []net.IP{net.ParseIP("198.51.100.10")},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(365 * 24 * time.Hour), // clients check it now; the server may run for weeks
		// Its own issuer, hence a CA: OpenSSL (pip's) takes a trusted
		// certificate for the issuer of one it checks, itself included,
		// only when it may sign certificates ("self-signed certificate").
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// presetHosts are the host names of every preset.
func presetHosts() []string {
	var names []string
	for _, p := range egress.Presets() {
		for _, r := range p.Rules() {
			if !slices.Contains(names, r.Name) {
				names = append(names, r.Name)
			}
		}
	}
	return names
}
