package main

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"strings"

	"github.com/stockade-dev/stockade/test/netenv/testhost"
)

// handlePyPI serves a PEP 503 simple index of testhost.PyPIProject on pypi.org,
// linking (with its sha256, which pip checks) to the wheel on
// files.pythonhosted.org, as PyPI does.
func handlePyPI(mux *http.ServeMux) error {
	name := "stockade_probe-" + testhost.ProbeVersion + "-py3-none-any.whl"
	whl, err := zipOf(pypiWheel())
	if err != nil {
		return fmt.Errorf("making the wheel: %w", err)
	}
	sum := sha256.Sum256(whl)
	url := "https://files.pythonhosted.org/packages/" + name
	index := `<!DOCTYPE html>
<html><body><h1>Links for ` + testhost.PyPIProject + `</h1>
<a href="` + url + `#sha256=` + hex.EncodeToString(sum[:]) + `">` + name + `</a>
</body></html>
`
	serveBody(mux, "pypi.org/simple/"+testhost.PyPIProject+"/", "text/html; charset=utf-8", []byte(index))
	serveBody(mux, "files.pythonhosted.org/packages/"+name, "application/octet-stream", whl)
	return nil
}

// pypiWheel is the files of the wheel (PEP 427): the module
// stockade_probe, METADATA,
// WHEEL, and the RECORD of every file's hash and size.
func pypiWheel() []archiveFile {
	info := "stockade_probe-" + testhost.ProbeVersion + ".dist-info/"
	files := []archiveFile{
		{"stockade_probe.py", "VERSION = \"" + testhost.ProbeVersion + "\"\n"},
		{info + "METADATA", "Metadata-Version: 2.1\nName: " + testhost.PyPIProject + "\nVersion: " + testhost.ProbeVersion +
			"\nSummary: served by the test host\n"},
		{info + "WHEEL", "Wheel-Version: 1.0\nGenerator: stockade-testnet\nRoot-Is-Purelib: true\nTag: py3-none-any\n"},
	}
	var record strings.Builder
	for _, f := range files {
		sum := sha256.Sum256([]byte(f.body))
		fmt.Fprintf(&record, "%s,sha256=%s,%d\n", f.name, base64.RawURLEncoding.EncodeToString(sum[:]), len(f.body))
	}
	record.WriteString(info + "RECORD,,\n")
	return append(files, archiveFile{info + "RECORD", record.String()})
}
