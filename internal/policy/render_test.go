package policy

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func sample(t *testing.T) Resolved {
	t.Helper()
	r, err := Resolve("/home/u/p",
		Layer{Kind: KindAdmin, Source: "/etc/stockade/config.json", Pids: ptr(int64(1000))},
		Layer{Kind: KindUser, Source: "/home/u/.config/stockade/config.json", RO: []string{"/srv"}},
		Layer{Kind: KindFlag, Source: "flag", Memory: ptr(int64(2 << 30)), Env: []string{"GOFLAGS", "TOKEN_X=hunter2"},
			Unmask: []string{".env"}})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestJSONRoundTrip(t *testing.T) {
	for _, r := range []Resolved{sample(t), func() Resolved { r, _ := Resolve("/w"); return r }()} {
		b, err := r.JSON()
		if err != nil {
			t.Fatal(err)
		}
		var back Resolved
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back, r) {
			t.Errorf("round trip differs:\n got %+v\nwant %+v", back, r)
		}
		again, _ := back.JSON()
		if string(again) != string(b) {
			t.Errorf("JSON is not stable:\n%s\n%s", b, again)
		}
	}
	b, _ := sample(t).JSON()
	var shape map[string]map[string]any
	if err := json.Unmarshal(b, &shape); err != nil {
		t.Fatal(err)
	}
	if shape["policy"]["memory"] != float64(2<<30) || shape["sources"]["memory"] != "flag --memory" {
		t.Errorf("unexpected shape: %s", b)
	}
	if _, ok := shape["list_sources"]["ro"]; !ok {
		t.Errorf("list_sources missing: %s", b)
	}
}

func TestText(t *testing.T) {
	text := sample(t).Text()
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	// Column widths follow the longest value; compare words, not spaces.
	want := []string{
		"workdir /home/u/p (default)",
		"memory 2.0 GiB (flag --memory)",
		"cpus no limit (default)",
		"pids 1000 (/etc/stockade/config.json)",
		"ro /srv (/home/u/.config/stockade/config.json)",
		"rw (none)",
		"protect .git/hooks/ (default)",
		".git/config (default)",
		"unmask .env (flag --unmask)",
		"env GOFLAGS (flag --env)",
		"TOKEN_X=… (flag --env)",
	}
	words := map[string]bool{}
	for _, l := range lines {
		words[strings.Join(strings.Fields(l), " ")] = true
	}
	for _, w := range want {
		if !words[w] {
			t.Errorf("no line %q in:\n%s", w, text)
		}
	}
	if strings.Contains(text, "hunter2") {
		t.Errorf("Text shows an env value:\n%s", text)
	}
	if !strings.HasPrefix(lines[0], "workdir") || len(lines) < len(showKeys) {
		t.Errorf("unexpected layout:\n%s", text)
	}
}
