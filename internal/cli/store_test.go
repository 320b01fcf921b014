package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stockade-dev/stockade/internal/policy"
)

// TestStoreExposed: the engine's storage is exposed when the workdir, a
// --rw or a --ro path holds it or lies in it, through a symlink too, made
// yet or not; not when they only share a prefix of their names.
func TestStoreExposed(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(base, "home")
	data := filepath.Join(home, ".local", "share")
	if err := os.MkdirAll(data, 0o700); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(base, "link")
	if err := os.Symlink(filepath.Join(home, ".local"), link); err != nil {
		t.Fatal(err)
	}
	store := filepath.Join(data, "stockade", "engine", "proj-0123456789ab") // not made
	for _, c := range []struct {
		name string
		p    policy.Policy
		want string
	}{
		{"elsewhere", policy.Policy{Workdir: filepath.Join(base, "proj")}, ""},
		{"workdir holds it", policy.Policy{Workdir: filepath.Join(home, ".local")}, filepath.Join(home, ".local")},
		{"rw holds it", policy.Policy{Workdir: filepath.Join(base, "proj"), RW: []string{data}}, data},
		{"ro through a symlink", policy.Policy{Workdir: filepath.Join(base, "proj"), RO: []string{link}}, link},
		{"a name's prefix only", policy.Policy{Workdir: filepath.Join(base, "proj"), RW: []string{filepath.Join(data, "stock")}}, ""},
		{"the storage itself", policy.Policy{Workdir: filepath.Join(base, "proj"), RW: []string{store}}, store},
		{"inside the storage", policy.Policy{Workdir: filepath.Join(base, "proj"), RO: []string{filepath.Join(store, "vfs")}}, filepath.Join(store, "vfs")},
	} {
		if got := storeExposed(store, c.p); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
		// The storage and a path inside it do not hold it; the rest do.
		if _, holds := storeExposedBy(store, c.p); c.want != "" && holds == (c.name == "inside the storage" || c.name == "the storage itself") {
			t.Errorf("%s: holds %v", c.name, holds)
		}
	}
}
