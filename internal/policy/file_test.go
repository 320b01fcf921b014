package policy

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// writeFile writes content to dir/name and returns the path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func ptr[T any](v T) *T { return &v }

func TestLoadFile(t *testing.T) {
	dir := t.TempDir()
	os.Mkdir(filepath.Join(dir, "data"), 0o755)
	os.Mkdir(filepath.Join(dir, "cache"), 0o755)
	p := writeFile(t, dir, "config.json", `{
		"ro": ["data", "`+dir+`/cache"],
		"rw": ["./cache/"],
		"protect": ["./secrets/"],
		"mask": [".token"],
		"unmask": [".env.example"],
		"allow_hooks": false,
		"env": ["GOFLAGS", "FOO=bar"],
		"memory": "2g",
		"cpus": 1.5,
		"pids": 100,
		"log_level": "debug",
		"network": "none",
		"workdir": "proj"
	}`)
	got, err := LoadFile(p, KindUser)
	if err != nil {
		t.Fatal(err)
	}
	want := Layer{
		Kind:       KindUser,
		Source:     p,
		Workdir:    ptr(filepath.Join(dir, "proj")),
		RO:         []string{filepath.Join(dir, "data"), filepath.Join(dir, "cache")},
		RW:         []string{filepath.Join(dir, "cache")},
		Protect:    []string{"secrets/"},
		Mask:       []string{".token"},
		Unmask:     []string{".env.example"},
		Env:        []string{"GOFLAGS", "FOO=bar"},
		AllowHooks: ptr(false),
		Memory:     ptr(int64(2 << 30)),
		CPUs:       ptr(1.5),
		Pids:       ptr(int64(100)),
		LogLevel:   ptr("debug"),
		Network:    ptr("none"),
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("LoadFile:\n got %+v\nwant %+v", got, want)
	}
}

func TestLoadFileMissing(t *testing.T) {
	p := filepath.Join(t.TempDir(), "nope.json")
	l, err := LoadFile(p, KindAdmin)
	if err != nil || !reflect.DeepEqual(l, Layer{Kind: KindAdmin, Source: p}) {
		t.Errorf("missing file: %+v, %v; want an empty layer", l, err)
	}
	if _, err := LoadFile(t.TempDir(), KindUser); err == nil || !strings.HasPrefix(err.Error(), "reading config: ") {
		t.Errorf("directory as config: %v", err)
	}
	if _, err := LoadFile(p, KindFlag); err == nil {
		t.Error("a flag layer cannot be a file")
	}
}

// TestLoadFileErrors checks that every error is one line naming the file,
// the key or position, and what to do.
func TestLoadFileErrors(t *testing.T) {
	tests := []struct {
		name    string
		kind    Kind
		content string
		want    []string // substrings after the file path
	}{
		{"unknown key", KindUser, `{"memroy": "2g"}`,
			[]string{`key "memroy" is unknown`, `did you mean "memory"?`, "known keys: ro, rw, protect"}},
		{"unknown key far from any", KindUser, `{"zzzzzzzz": 1}`,
			[]string{`key "zzzzzzzz" is unknown; (known keys:`}},
		{"duplicate key", KindUser, `{"pids": 1, "pids": 2}`, []string{`key "pids" appears twice`}},
		{"workdir in project", KindProject, `{"workdir": "/x"}`,
			[]string{`key "workdir" is not allowed in a project file`, "--workdir"}},
		{"slurm in a user file", KindUser, `{"slurm": {"allow_flags": ["uid"]}}`,
			[]string{`key "slurm" may be set only in /etc/stockade/config.json`, "cannot widen the Slurm allowlist"}},
		{"slurm in a project file", KindProject, `{"slurm": {}}`,
			[]string{`key "slurm" may be set only in /etc/stockade/config.json`}},
		{"bad json", KindUser, "{\n  \"pids\": 1,\n}", []string{":3:1: invalid JSON", "fix the syntax"}},
		{"bad value", KindUser, "{\n  \"pids\":\n    tru }", []string{":3:8: invalid JSON: invalid character ' ' in literal true"}},
		{"truncated", KindUser, `{"pids": 1`, []string{":1:10: invalid JSON: unexpected end of JSON input"}},
		{"empty", KindUser, ``, []string{":1:1: invalid JSON: unexpected end of JSON input"}},
		{"trailing data", KindUser, `{} {}`, []string{":1:4: invalid JSON: invalid character '{' after top-level value"}},
		{"not an object", KindUser, `["ro"]`, []string{"must be a JSON object"}},
		{"memory lots", KindAdmin, `{"memory": "lots"}`,
			[]string{`"memory": "lots" is not a size; write a number with k, m, g or t (e.g. "2g")`}},
		{"memory zero", KindUser, `{"memory": 0}`,
			[]string{`"memory": 0 must be greater than 0; leave the key out for no limit`}},
		{"memory fraction of bytes", KindUser, `{"memory": 1.5}`, []string{`"memory": 1.5 is a size without a unit`}},
		{"memory without a unit", KindUser, `{"memory": 4}`, []string{`"memory": 4 is a size without a unit; write it with k, m, g or t (e.g. "4g")`}},
		{"memory bool", KindUser, `{"memory": true}`, []string{`"memory": true has the wrong type; write a string with a unit such as`}},
		{"cpus negative", KindUser, `{"cpus": -1}`, []string{`"cpus": -1 must be greater than 0`}},
		{"cpus zero string", KindUser, `{"cpus": "0"}`, []string{`"cpus": "0" must be greater than 0; leave the key out`}},
		{"cpus word", KindUser, `{"cpus": "many"}`, []string{`"cpus": "many" is not a number of CPUs`}},
		{"pids zero", KindUser, `{"pids": 0}`, []string{`"pids": 0 must be greater than 0; leave the key out for no limit`}},
		{"pids fraction", KindUser, `{"pids": 1.5}`, []string{`"pids": 1.5 is not a whole number`}},
		{"log level", KindUser, `{"log_level": "loud"}`,
			[]string{`"log_level": "loud" is not a log level; use one of: debug, info, warn, error`}},
		{"log level type", KindUser, `{"log_level": 3}`, []string{`"log_level": 3 has the wrong type; write a string: "debug"`}},
		{"network host", KindAdmin, `{"network": "host"}`,
			[]string{`"network": "host" is not a network mode; use one of: proxy, none`}},
		{"allow_hooks string", KindUser, `{"allow_hooks": "yes"}`,
			[]string{`"allow_hooks": "yes" is not a boolean; write true or false`}},
		{"shared_home string", KindUser, `{"shared_home": "yes"}`,
			[]string{`"shared_home": "yes" is not a boolean; write true or false`}},
		{"list not list", KindUser, `{"ro": "/x"}`, []string{`"ro": "/x" is not a list of strings; write e.g. ["/srv/data"]`}},
		{"list of numbers", KindUser, `{"mask": [1]}`, []string{`"mask": [1] is not a list of strings`}},
		{"list null", KindUser, `{"env": null}`, []string{`"env": null is not a list of strings; write e.g. ["GOFLAGS"]`}},
		{"ro missing", KindUser, `{"ro": ["nope"]}`, []string{`"ro": "nope" (`, `/nope) does not exist; create it or remove the entry`}},
		{"rw empty", KindUser, `{"rw": [""]}`, []string{`"rw": "" is empty; write a path`}},
		{"mask escapes", KindProject, `{"mask": ["../x"]}`, []string{`"mask": "../x" is not inside the workdir`}},
		{"env bad name hides value", KindUser, `{"env": ["1X=hunter2"]}`, []string{`"env": "1X" is not a valid variable name`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := writeFile(t, t.TempDir(), "config.json", tt.content)
			_, err := LoadFile(p, tt.kind)
			if err == nil {
				t.Fatal("no error")
			}
			msg := err.Error()
			if !strings.HasPrefix(msg, p) || strings.Contains(msg, "\n") {
				t.Errorf("error %q must be one line starting with the file path", msg)
			}
			for _, w := range tt.want {
				if !strings.Contains(msg, w) {
					t.Errorf("error %q\n  does not contain %q", msg, w)
				}
			}
			if strings.Contains(msg, "hunter2") {
				t.Errorf("error %q shows an env value", msg)
			}
		})
	}
}

// TestSlurmKeyAdmin: the admin file may hold the Slurm chaperon's
// allowlist, which package slurm reads; the policy ignores it.
func TestSlurmKeyAdmin(t *testing.T) {
	if _, err := parseFile([]byte(`{"slurm": {"allow_flags": ["account"]}, "pids": 10}`), "/etc/stockade/config.json", KindAdmin); err != nil {
		t.Fatal(err)
	}
	if _, err := parseFile([]byte(`{"slurm": {}, "slurm": {}}`), "/etc/stockade/config.json", KindAdmin); err == nil {
		t.Error("a second slurm key was accepted")
	}
}
