package main

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/stockade-dev/stockade/test/netenv/testhost"
)

// get asks h for url as a client through a proxy would: the host in the
// request, not the address.
func get(t *testing.T, h http.Handler, url string) (int, string) {
	t.Helper()
	w := httptest.NewRecorder()
	h.ServeHTTP(w, httptest.NewRequest(http.MethodGet, url, nil))
	body, _ := io.ReadAll(w.Result().Body)
	return w.Code, string(body)
}

// TestPackages: each index links to a file the server serves, on the host
// the link names, with the SHA-256 the index gives (which the client
// checks); "/" of every host is still Hello; a registry's paths answer on
// its own host only.
func TestPackages(t *testing.T) {
	h, err := newHandler(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	sha := func(s string) string { sum := sha256.Sum256([]byte(s)); return hex.EncodeToString(sum[:]) }

	code, index := get(t, h, "https://pypi.org/simple/"+testhost.PyPIProject+"/")
	m := regexp.MustCompile(`href="([^"#]+)#sha256=([0-9a-f]{64})"`).FindStringSubmatch(index)
	if code != 200 || m == nil {
		t.Fatalf("pypi index: %d %q", code, index)
	}
	if code, whl := get(t, h, m[1]); code != 200 || sha(whl) != m[2] {
		t.Errorf("%s: %d, sha256 %s, want the index's %s", m[1], code, sha(whl), m[2])
	}

	code, entry := get(t, h, "https://index.crates.io/st/oc/"+testhost.Crate)
	c := regexp.MustCompile(`"cksum":"([0-9a-f]{64})"`).FindStringSubmatch(entry)
	if code != 200 || c == nil {
		t.Fatalf("crates index: %d %q", code, entry)
	}
	dl := "https://static.crates.io/crates/" + testhost.Crate + "/" + testhost.ProbeVersion + "/download"
	if code, crate := get(t, h, dl); code != 200 || sha(crate) != c[1] {
		t.Errorf("%s: %d, sha256 %s, want the index's %s", dl, code, sha(crate), c[1])
	}

	for _, host := range presetHosts() {
		if code, body := get(t, h, "https://"+host+"/"); code != 200 || body != Hello {
			t.Errorf("%s/: %d %q, want Hello", host, code, body)
		}
	}
	if code, _ := get(t, h, "https://other.test/simple/"+testhost.PyPIProject+"/"); code != http.StatusNotFound {
		t.Errorf("the pypi index on other.test: %d, want 404", code)
	}
	if code, key := get(t, h, "http://allowed.test"+testhost.GoSumDBKeyPath); code != 200 || !strings.HasPrefix(key, "sum.golang.org+") {
		t.Errorf("%s: %d %q", testhost.GoSumDBKeyPath, code, key)
	}
}
