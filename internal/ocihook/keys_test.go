package ocihook

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// TestKeysAsTheRuntimeReads: Go's encoding/json matches a key to a field
// without regard to case (and Unicode folding: "ſ" is "s", "K" is "k") and
// keeps the last of duplicate keys, while a runtime with a case-sensitive
// parser (crun) reads "mounts" exactly and may keep the first. A config
// that hides its real mounts or process behind such a key must be refused,
// not checked as the harmless twin.
func TestKeysAsTheRuntimeReads(t *testing.T) {
	f, raw := session(t)
	good, err := Precreate(raw, f)
	if err != nil {
		t.Fatal(err)
	}
	if err := Check(good, f); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	json.Unmarshal(good, &m)
	benign, _ := json.Marshal(m["mounts"])
	evil, _ := json.Marshal(append(m["mounts"].([]any), map[string]any{
		"destination": "/host", "type": "bind", "source": "/", "options": []string{"rbind", "nosuid", "nodev"}}))
	delete(m, "mounts")
	rest, _ := json.Marshal(m)
	body := strings.TrimPrefix(string(rest), "{")
	for name, config := range map[string]string{
		"duplicate key, the last harmless": `{"mounts": ` + string(evil) + `, "mounts": ` + string(benign) + `, ` + body,
		"case-folded twin":                 `{"mounts": ` + string(evil) + `, "Mounts": ` + string(benign) + `, ` + body,
		"Unicode-folded twin":              `{"mounts": ` + string(evil) + `, "mountſ": ` + string(benign) + `, ` + body,
		"only a case-folded key":           `{"MOUNTS": ` + string(benign) + `, ` + body,
		"nested duplicate": strings.Replace(string(good), `"noNewPrivileges":true`,
			`"noNewPrivileges":false,"noNewPrivileges":true`, 1),
	} {
		t.Run(name, func(t *testing.T) {
			if config == string(good) {
				t.Fatal("the row changed nothing")
			}
			if !json.Valid([]byte(config)) {
				t.Fatalf("test config is not JSON: %.200s", config)
			}
			err := Check([]byte(config), f)
			var r *Refusal
			if !errors.As(err, &r) || r.Check != "config" {
				t.Fatalf("Check = %v, want refused by the config check", err)
			}
		})
	}
}

// TestKeysDeep: a config nested without end is refused at once, not walked
// a byte at a time until the hook runs out of memory.
func TestKeysDeep(t *testing.T) {
	f, _ := session(t)
	err := Check([]byte(strings.Repeat("[", 1<<20)), f)
	var r *Refusal
	if !errors.As(err, &r) || r.Check != "config" || !strings.Contains(err.Error(), "nested more than") {
		t.Fatalf("Check = %v, want refused as nested too deep", err)
	}
}
