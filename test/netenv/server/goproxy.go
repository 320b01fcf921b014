package main

import (
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"net/http"
	"sort"

	"github.com/stockade-dev/stockade/test/netenv/testhost"
)

// handleGo serves testhost.GoModule the way the go command meets a module
// with its defaults (GOPROXY=https://proxy.golang.org,direct,
// GOSUMDB=sum.golang.org): the module proxy protocol
// (go.dev/ref/mod#goproxy-protocol) on proxy.golang.org, whose .zip answer
// is a redirect to storage.googleapis.com, as the real proxy's often is;
// and the checksum database on sum.golang.org. The proxy answers 404 to
// /sumdb/sum.golang.org/supported (the real one proxies the database), so
// that the go command asks sum.golang.org itself, as it does behind a
// proxy that does not: every host of @go is then used.
func handleGo(mux *http.ServeMux) error {
	mod, vers := testhost.GoModule, "v"+testhost.ProbeVersion
	prefix := mod + "@" + vers + "/"
	gomod := "module " + mod + "\n\ngo 1.21\n"
	files := []archiveFile{
		{prefix + "go.mod", gomod},
		{prefix + "probe.go", "// Package probe is served by the test host.\npackage probe\n"},
		{prefix + "VERSION", testhost.ProbeVersion + "\n"},
	}
	zipped, err := zipOf(files)
	if err != nil {
		return fmt.Errorf("making the module zip: %w", err)
	}
	gosum := fmt.Sprintf("%s %s %s\n%s %s/go.mod %s\n", mod, vers, hash1(files),
		mod, vers, hash1([]archiveFile{{"go.mod", gomod}}))
	db, err := newSumDB("sum.golang.org", gosum)
	if err != nil {
		return fmt.Errorf("making the checksum database: %w", err)
	}

	text := "text/plain; charset=utf-8"
	at := "proxy.golang.org/" + mod + "/@v/"
	serveBody(mux, at+"list", text, []byte(vers+"\n"))
	serveBody(mux, at+vers+".info", "application/json",
		[]byte(`{"Version":"`+vers+`","Time":"`+fixedTime.Format("2006-01-02T15:04:05Z")+`"}`))
	serveBody(mux, at+vers+".mod", text, []byte(gomod))
	bucket := "/proxy-golang-org-prod/" + mod + "@" + vers + ".zip"
	mux.HandleFunc(at+vers+".zip", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "https://storage.googleapis.com"+bucket, http.StatusFound)
	})
	serveBody(mux, "storage.googleapis.com"+bucket, "application/zip", zipped)
	mux.HandleFunc("proxy.golang.org/sumdb/", http.NotFound)
	serveBody(mux, "sum.golang.org/lookup/"+mod+"@"+vers, text, db.lookup)
	serveBody(mux, "sum.golang.org/tile/8/0/000.p/1", "application/octet-stream", db.tile)
	serveBody(mux, testhost.GoSumDBKeyPath, text, []byte(db.vkey+"\n"))
	return nil
}

// hash1 is the "h1:" hash of go.sum (dirhash.Hash1 in golang.org/x/mod):
// SHA-256 over a line "SHA256HEX  NAME" for each file, sorted by name.
func hash1(files []archiveFile) string {
	sorted := append([]archiveFile(nil), files...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].name < sorted[j].name })
	h := sha256.New()
	for _, f := range sorted {
		fmt.Fprintf(h, "%x  %s\n", sha256.Sum256([]byte(f.body)), f.name)
	}
	return "h1:" + base64.StdEncoding.EncodeToString(h.Sum(nil))
}
