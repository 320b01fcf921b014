package ocihook

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
)

// A container's facts that the config cannot tell, or could be made to
// tell wrongly: the reference of the image it was made from (the agent
// sets annotations and labels at will, and podman records the reference in
// none of the config's fields), and which layer is its own. The engine
// keeps both in its storage, which only the engine writes: the command's
// view does not have it, and a container may bind from it only its own
// files (checkMounts). This reads the storage's own records, in
// containers/storage's format, as the engine left them before it ran the
// runtime.

// Container is the engine's record of one container.
type Container struct {
	ID string
	// Layer is the container's own layer: its root filesystem.
	Layer string
	// Image is the reference the container was made from, as the engine
	// resolved it ("localhost/img:latest", "registry/app@sha256:..."), and
	// ImageDigests the manifest digests its image has.
	Image        string
	ImageID      string
	ImageDigests []string
}

// storedContainer is one entry of containers/storage's containers.json.
type storedContainer struct {
	ID       string `json:"id"`
	Image    string `json:"image"`
	Layer    string `json:"layer"`
	Metadata string `json:"metadata"` // libpod's, with the image's reference
}

// isStorageID reports whether id has the form of the ids
// containers/storage gives containers, images and layers: 64 hex digits.
func isStorageID(id string) bool {
	if len(id) != 64 {
		return false
	}
	for _, c := range id {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// maxRecords bounds what LookupContainer reads of one storage record file.
const maxRecords = 64 << 20

// LookupContainer finds the container with the given id in the engine's
// storage; an error says what is missing or malformed.
func LookupContainer(f Facts, id string) (*Container, error) {
	if !isStorageID(id) {
		return nil, fmt.Errorf("container id %q is not a storage id", id)
	}
	var containers []storedContainer
	if err := readRecords(filepath.Join(f.Storage, f.Driver+"-containers", "containers.json"), &containers); err != nil {
		return nil, err
	}
	i := slices.IndexFunc(containers, func(c storedContainer) bool { return c.ID == id })
	if i < 0 {
		return nil, fmt.Errorf("the engine's storage has no container %s", id)
	}
	rec := containers[i]
	if !isStorageID(rec.Layer) {
		return nil, fmt.Errorf("the engine's record of container %s has no layer", id)
	}
	c := &Container{ID: id, Layer: rec.Layer, ImageID: rec.Image}
	var meta struct {
		ImageName string `json:"image-name"`
	}
	if rec.Metadata != "" {
		if err := json.Unmarshal([]byte(rec.Metadata), &meta); err != nil {
			return nil, fmt.Errorf("reading the engine's record of container %s: %w", id, err)
		}
	}
	c.Image = meta.ImageName
	if rec.Image == "" {
		return c, nil // made from a root filesystem, not an image
	}
	var images []struct {
		ID      string   `json:"id"`
		Digest  string   `json:"digest"`
		Digests []string `json:"digests"`
	}
	if err := readRecords(filepath.Join(f.Storage, f.Driver+"-images", "images.json"), &images); err != nil {
		return nil, err
	}
	for _, img := range images {
		if img.ID == rec.Image {
			if img.Digest != "" {
				c.ImageDigests = append(c.ImageDigests, img.Digest)
			}
			c.ImageDigests = append(c.ImageDigests, img.Digests...)
		}
	}
	return c, nil
}

func readRecords(path string, v any) error {
	fd, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("reading the engine's storage: %w", err)
	}
	defer fd.Close()
	b, err := io.ReadAll(io.LimitReader(fd, maxRecords))
	if err != nil {
		return fmt.Errorf("reading the engine's storage: %w", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("reading the engine's storage %s: %w", path, err)
	}
	return nil
}

// rootOf is the directory of a layer in the storage, by driver.
func rootOf(f *Facts, layer string) string {
	if f.Driver == "overlay" {
		return filepath.Join(f.Storage, "overlay", layer, "merged")
	}
	return filepath.Join(f.Storage, f.Driver, "dir", layer)
}

// ownDirs are the directories of a container's own files the engine binds
// into it (hosts, hostname, resolv.conf, /dev/shm, .containerenv).
func ownDirs(f *Facts, id string) []string {
	return []string{
		filepath.Join(f.Storage, f.Driver+"-containers", id, "userdata"),
		filepath.Join(f.RunRoot, f.Driver+"-containers", id, "userdata"),
	}
}

// Bundle is the engine's (podman's) bundle directory of the container with
// the given id, where its config.json is, or "" for an id that is not a
// storage id.
func Bundle(f Facts, id string) string {
	if !isStorageID(id) {
		return ""
	}
	return ownDirs(&f, id)[0]
}

// RuntimeLog is where the engine (podman) has the runtime log its errors
// for the container with the given id (a storage id), or "" for another.
func RuntimeLog(f Facts, id string) string {
	if !isStorageID(id) {
		return ""
	}
	return filepath.Join(ownDirs(&f, id)[1], "oci-log")
}
