package policy

import (
	"strings"
	"testing"
)

// TestTerminalKey: terminal is filtered unless the user asks for raw, which
// is a loosening; a project file cannot ask for it, nor any layer after an
// admin file that sets filtered; a bad value names the source and the fix.
func TestTerminalKey(t *testing.T) {
	r, err := Resolve("/p")
	if err != nil || r.Policy.Terminal != "filtered" || r.Sources["terminal"] != SourceDefault {
		t.Fatalf("default: %q from %q, %v", r.Policy.Terminal, r.Sources["terminal"], err)
	}
	if w := Warnings(r.Policy, "/home/u", 1000); len(w) != 0 {
		t.Errorf("the default warns: %q", w)
	}
	flag, err := FromFlags(Flags{Terminal: ptr("raw")}, "/p")
	if err != nil {
		t.Fatal(err)
	}
	r, err = Resolve("/p", flag)
	if err != nil || r.Policy.Terminal != "raw" || r.Sources["terminal"] != "flag --terminal" {
		t.Fatalf("flag: %q from %q, %v", r.Policy.Terminal, r.Sources["terminal"], err)
	}
	if w := r.Warnings("/home/u", 1000); len(w) != 1 || !strings.HasPrefix(w[0], "terminal raw:") || !strings.HasSuffix(w[0], "(flag --terminal)") {
		t.Errorf("raw is not a loosening: %q", w)
	}
	if !strings.Contains(r.Text(), "terminal") {
		t.Errorf("policy show has no terminal line:\n%s", r.Text())
	}
	user, err := parseFile([]byte(`{"terminal": "raw"}`), "/home/u/.config/stockade/config.json", KindUser)
	if err != nil {
		t.Fatal(err)
	}
	if r, err := Resolve("/p", user); err != nil || r.Policy.Terminal != "raw" {
		t.Errorf("user file: %q, %v", r.Policy.Terminal, err)
	}

	for _, tt := range []struct {
		name   string
		layers func() ([]Layer, error)
		want   string
	}{
		{"project raw", func() ([]Layer, error) {
			l, err := parseFile([]byte(`{"terminal": "raw"}`), "/p/.stockade.json", KindProject)
			return []Layer{l}, err
		}, `/p/.stockade.json: "terminal": "raw" is not allowed: a project file may only tighten the sandbox`},
		{"admin filtered", func() ([]Layer, error) {
			return []Layer{{Kind: KindAdmin, Source: AdminPath, Terminal: ptr("filtered")}, flag}, nil
		}, `flag --terminal: "raw" is not allowed: /etc/stockade/config.json sets terminal "filtered"`},
		{"env value", func() ([]Layer, error) {
			l, err := FromEnv([]string{"STOCKADE_TERMINAL=plain"}, "/p")
			return []Layer{l}, err
		}, `env STOCKADE_TERMINAL: "plain" is not a terminal mode; use one of: filtered, raw`},
		{"file type", func() ([]Layer, error) {
			l, err := parseFile([]byte(`{"terminal": true}`), "/home/u/.config/stockade/config.json", KindUser)
			return []Layer{l}, err
		}, `"terminal": true has the wrong type; write a string: "filtered", "raw"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			layers, err := tt.layers()
			if err == nil {
				_, err = Resolve("/p", layers...)
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want %q", err, tt.want)
			}
		})
	}
}
