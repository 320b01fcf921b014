package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"

	"github.com/stockade-dev/stockade/test/netenv/testhost"
)

// handleCrates serves testhost.Crate as crates.io does to cargo's sparse
// protocol (doc.rust-lang.org/cargo/reference/registry-index.html):
// config.json and the crate's index file (st/oc/stockade-probe: the first
// two and next two letters) on index.crates.io, the .crate, whose
// SHA-256 the index lists and cargo checks, on static.crates.io, which
// config.json names as dl.
func handleCrates(mux *http.ServeMux) error {
	dir := testhost.Crate + "-" + testhost.ProbeVersion + "/"
	crate, err := tarGz([]archiveFile{
		{dir + "Cargo.toml", "[package]\nname = \"" + testhost.Crate + "\"\nversion = \"" + testhost.ProbeVersion + "\"\nedition = \"2021\"\n" +
			"description = \"served by the test host\"\n"},
		{dir + "src/lib.rs", "//! Served by the test host.\n"},
		{dir + "VERSION", testhost.ProbeVersion + "\n"},
	})
	if err != nil {
		return fmt.Errorf("making the crate: %w", err)
	}
	sum := sha256.Sum256(crate)
	entry := fmt.Sprintf(`{"name":%q,"vers":%q,"deps":[],"cksum":%q,"features":{},"yanked":false}`+"\n",
		testhost.Crate, testhost.ProbeVersion, hex.EncodeToString(sum[:]))
	// dl without {crate} or {version} markers: cargo appends /NAME/VERSION/download.
	serveBody(mux, "index.crates.io/config.json", "application/json", []byte(`{"dl":"https://static.crates.io/crates","api":"https://crates.io"}`))
	serveBody(mux, "index.crates.io/"+testhost.Crate[:2]+"/"+testhost.Crate[2:4]+"/"+testhost.Crate, "text/plain", []byte(entry))
	serveBody(mux, "static.crates.io/crates/"+testhost.Crate+"/"+testhost.ProbeVersion+"/download", "application/gzip", crate)
	return nil
}
