package main

// The package registries of the ecosystem presets (internal/egress,
// preset.go), each on the host names its standard client uses by default,
// each holding one tiny package made at start: enough for pip install, go
// mod download and cargo fetch to run to the end through the sandbox's
// proxy, under a resolver that points the preset's names here.

import (
	"archive/tar"
	"archive/zip"
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"time"
)

// fixedTime dates every file and version the registries serve, so that a
// package's hash is the same at every start.
var fixedTime = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// archiveFile is one file of a package archive, named as in the archive.
type archiveFile struct{ name, body string }

// handlePackages registers every registry on mux.
func handlePackages(mux *http.ServeMux) error {
	for _, h := range []func(*http.ServeMux) error{handlePyPI, handleGo, handleCrates} {
		if err := h(mux); err != nil {
			return err
		}
	}
	return nil
}

// serveBody registers a handler that answers body, of contentType.
func serveBody(mux *http.ServeMux, pattern, contentType string, body []byte) {
	mux.HandleFunc(pattern, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", contentType)
		w.Write(body)
	})
}

// zipOf makes a zip of files, in their order, without directory entries.
func zipOf(files []archiveFile) ([]byte, error) {
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range files {
		w, err := zw.CreateHeader(&zip.FileHeader{Name: f.name, Method: zip.Deflate, Modified: fixedTime})
		if err != nil {
			return nil, err
		}
		if _, err := io.WriteString(w, f.body); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// tarGz makes a gzipped tar of files, each a regular file of mode 0644.
func tarGz(files []archiveFile) ([]byte, error) {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	for _, f := range files {
		hdr := &tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.body)), ModTime: fixedTime, Typeflag: tar.TypeReg}
		if err := tw.WriteHeader(hdr); err != nil {
			return nil, err
		}
		if _, err := io.WriteString(tw, f.body); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
