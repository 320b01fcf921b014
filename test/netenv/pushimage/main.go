// Command pushimage builds the container image of the tests that pull
// through stockade's registry proxy, and pushes it to the test network's
// registry (scripts/testnet.sh runs Debian's docker-registry on
// 198.51.100.30:5000, plain HTTP).
//
// The image has one layer: the host's static busybox at /bin/busybox and a
// link to it for each applet the tests use. Every tar header and the gzip
// stream are made without times, so that the same busybox gives the same
// digest. It is pushed with the registry API (a monolithic blob upload, a
// Docker schema 2 manifest), and the manifest's digest is written to
// -digest, for the tests that pull by digest.
//
// It uses only the standard library and builds static (CGO_ENABLED=0).
package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/url"
	"os"
	"runtime"
	"strings"
)

// applets are the busybox links of the image.
var applets = []string{"sh", "echo", "cat", "true", "false", "ls", "env", "sleep", "wget", "nc", "test", "grep", "id"}

func main() {
	registry := flag.String("registry", "http://198.51.100.30:5000", "the registry's base URL")
	repo := flag.String("repo", "stockade/busybox", "the repository")
	tag := flag.String("tag", "1", "the tag")
	busybox := flag.String("busybox", "/bin/busybox", "a static busybox")
	digestFile := flag.String("digest", "", "file the manifest's digest is written to")
	flag.Parse()
	log.SetPrefix("pushimage: ")
	log.SetFlags(0)
	digest, err := push(*registry, *repo, *tag, *busybox)
	if err != nil {
		log.Fatal(err)
	}
	if *digestFile != "" {
		if err := os.WriteFile(*digestFile, []byte(digest+"\n"), 0o644); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Println(digest)
}

func push(registry, repo, tag, busybox string) (string, error) {
	bb, err := os.ReadFile(busybox)
	if err != nil {
		return "", err
	}
	layer, diffID, err := makeLayer(bb)
	if err != nil {
		return "", fmt.Errorf("making the layer: %w", err)
	}
	config, err := json.Marshal(map[string]any{
		"architecture": runtime.GOARCH,
		"os":           "linux",
		"config":       map[string]any{"Env": []string{"PATH=/bin"}, "Cmd": []string{"sh"}},
		"rootfs":       map[string]any{"type": "layers", "diff_ids": []string{diffID}},
		// One history entry per layer: buildah refuses to build on an
		// image whose history does not account for its layers.
		"history": []map[string]string{{"created_by": "test/netenv/pushimage: /bin/busybox and its links"}},
	})
	if err != nil {
		return "", err
	}
	for _, blob := range [][]byte{layer, config} {
		if err := putBlob(registry, repo, blob); err != nil {
			return "", err
		}
	}
	manifest, err := json.Marshal(map[string]any{
		"schemaVersion": 2,
		"mediaType":     "application/vnd.docker.distribution.manifest.v2+json",
		"config": map[string]any{"mediaType": "application/vnd.docker.container.image.v1+json",
			"size": len(config), "digest": sha(config)},
		"layers": []any{map[string]any{"mediaType": "application/vnd.docker.image.rootfs.diff.tar.gzip",
			"size": len(layer), "digest": sha(layer)}},
	})
	if err != nil {
		return "", err
	}
	req, err := http.NewRequest(http.MethodPut, registry+"/v2/"+repo+"/manifests/"+tag, bytes.NewReader(manifest))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/vnd.docker.distribution.manifest.v2+json")
	if err := do(req, http.StatusCreated); err != nil {
		return "", fmt.Errorf("putting the manifest: %w", err)
	}
	return sha(manifest), nil
}

// makeLayer is the gzipped tar of the image's one layer, and the digest
// of the tar (the layer's diff id).
func makeLayer(bb []byte) (gz []byte, diffID string, err error) {
	var t bytes.Buffer
	tw := tar.NewWriter(&t)
	for _, h := range []*tar.Header{
		{Typeflag: tar.TypeDir, Name: "bin/", Mode: 0o755},
		{Typeflag: tar.TypeDir, Name: "tmp/", Mode: 0o1777},
		{Typeflag: tar.TypeReg, Name: "bin/busybox", Mode: 0o755, Size: int64(len(bb))},
	} {
		h.Format = tar.FormatPAX
		if err := tw.WriteHeader(h); err != nil {
			return nil, "", err
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := tw.Write(bb); err != nil {
				return nil, "", err
			}
		}
	}
	for _, a := range applets {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeSymlink, Name: "bin/" + a, Linkname: "busybox", Mode: 0o777, Format: tar.FormatPAX}); err != nil {
			return nil, "", err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, "", err
	}
	var z bytes.Buffer
	zw := gzip.NewWriter(&z)
	if _, err := zw.Write(t.Bytes()); err != nil {
		return nil, "", err
	}
	if err := zw.Close(); err != nil {
		return nil, "", err
	}
	return z.Bytes(), sha(t.Bytes()), nil
}

// putBlob uploads blob in one request, unless the registry has it.
func putBlob(registry, repo string, blob []byte) error {
	d := sha(blob)
	if r, err := http.Head(registry + "/v2/" + repo + "/blobs/" + d); err == nil {
		r.Body.Close()
		if r.StatusCode == http.StatusOK {
			return nil
		}
	}
	r, err := http.Post(registry+"/v2/"+repo+"/blobs/uploads/", "application/octet-stream", nil)
	if err != nil {
		return err
	}
	io.Copy(io.Discard, r.Body)
	r.Body.Close()
	if r.StatusCode != http.StatusAccepted {
		return fmt.Errorf("starting the upload of %s: %s", d, r.Status)
	}
	loc, err := url.Parse(r.Header.Get("Location"))
	if err != nil {
		return err
	}
	base, _ := url.Parse(registry)
	loc = base.ResolveReference(loc)
	q := loc.Query()
	q.Set("digest", d)
	loc.RawQuery = q.Encode()
	req, err := http.NewRequest(http.MethodPut, loc.String(), bytes.NewReader(blob))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/octet-stream")
	if err := do(req, http.StatusCreated); err != nil {
		return fmt.Errorf("uploading %s: %w", d, err)
	}
	return nil
}

func do(req *http.Request, want int) error {
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer r.Body.Close()
	if r.StatusCode != want {
		b, _ := io.ReadAll(io.LimitReader(r.Body, 512))
		return fmt.Errorf("%s: %s", r.Status, strings.TrimSpace(string(b)))
	}
	return nil
}

func sha(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}
