package ocihook

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// TestNamespaceThroughSymlink: the runtime opens a namespace path and
// follows its symbolic links, so a link to the engine's own network
// namespace is the engine's namespace, whatever the link's text says; a
// check that read the link's text (os.Readlink) would take
// "/proc/self/ns/net" for a name of some other namespace and let the
// container join the engine's.
func TestNamespaceThroughSymlink(t *testing.T) {
	f, raw := session(t)
	f.NamespaceOf = nil // as the hook runs: the real files
	f.EngineNamespaces = map[string]string{}
	for typ, file := range map[string]string{"network": "net", "pid": "pid"} {
		id, err := os.Readlink("/proc/self/ns/" + file)
		if err != nil {
			t.Skip(err)
		}
		f.EngineNamespaces[typ] = id
	}
	good, err := Precreate(raw, f)
	if err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(t.TempDir(), "netns")
	if err := os.Symlink("/proc/self/ns/net", link); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/proc/self/ns/net", link} {
		var m map[string]any
		json.Unmarshal(good, &m)
		for _, n := range m["linux"].(map[string]any)["namespaces"].([]any) {
			if n.(map[string]any)["type"] == "network" {
				n.(map[string]any)["path"] = path
			}
		}
		b, _ := json.Marshal(m)
		var r *Refusal
		if err := Check(b, f); !errors.As(err, &r) || r.Check != "namespaces" {
			t.Errorf("network namespace %s (the engine's): Check = %v, want refused by the namespaces check", path, err)
		}
	}
}
