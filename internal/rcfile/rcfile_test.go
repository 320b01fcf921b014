package rcfile

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    map[string]string
		wantErr string // substring of the error; "" means no error
	}{
		{"empty", "", map[string]string{}, ""},
		{"blank and comments", "\n  \n# c\n  # indented\n", map[string]string{}, ""},
		{"plain", "A=1\nB_2=two", map[string]string{"A": "1", "B_2": "two"}, ""},
		{"export", "export A=1\nexport\tB=2", map[string]string{"A": "1", "B": "2"}, ""},
		{"name export", "exportX=1\nexport=2", map[string]string{"exportX": "1", "export": "2"}, ""},
		{"trimmed", "  A  =  v w  \t", map[string]string{"A": "v w"}, ""},
		{"empty value", "A=\nB=   \nC= # c", map[string]string{"A": "", "B": "", "C": ""}, ""},
		{"trailing comment", "A=v # c\nB=v\t#c", map[string]string{"A": "v", "B": "v"}, ""},
		{"hash in value", "A=a#b\nB=#b", map[string]string{"A": "a#b", "B": "#b"}, ""},
		{"equals in value", "A=a=b==", map[string]string{"A": "a=b=="}, ""},
		{"single", `A='x # "y" \n'  # c`, map[string]string{"A": `x # "y" \n`}, ""},
		{"double", `A="q\" b\\ n\n t\t other\x" # c`, map[string]string{"A": "q\" b\\ n\n t\t other\\x"}, ""},
		{"double keeps hash", `A="a #b"`, map[string]string{"A": "a #b"}, ""},
		{"empty quotes", `A=''` + "\n" + `B=""`, map[string]string{"A": "", "B": ""}, ""},
		{"last wins", "A=1\nA=2", map[string]string{"A": "2"}, ""},
		{"crlf", "A=1\r\nB='2'\r\n", map[string]string{"A": "1", "B": "2"}, ""},
		{"bom", "\ufeffA=1", map[string]string{"A": "1"}, ""},
		// Denials: each names the line and never the value.
		{"no equals", "A=1\nsk-secret-value", nil, "f:2: not a KEY=VALUE line; fix:"},
		{"bad name", "1A=sk-secret-value", nil, "f:1: invalid name"},
		{"dash name", "sk-secret-value=x", nil, "f:1: invalid name"},
		{"empty name", "=sk-secret-value", nil, "invalid name"},
		{"single open", "A='sk-secret-value", nil, "f:1: single quote not closed"},
		{"double open", `A="sk-secret-value`, nil, "double quote not closed"},
		{"double escaped close", `A="sk-secret-value\"`, nil, "double quote not closed"},
		{"multi-line", "A=\"sk-secret-value\nmore\"", nil, "f:1: double quote not closed"},
		{"after quote", `A="sk-secret" value`, nil, "text after the closing quote"},
		{"comment glued", `A='sk-secret'#c`, nil, "text after the closing quote"},
		{"export only", "export", nil, "not a KEY=VALUE line"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse(strings.NewReader(tt.in), "f")
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want it to contain %q", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), "secret") {
					t.Errorf("error %q shows the value", err)
				}
				var e *Error
				if !errors.As(err, &e) || e.Fix == "" {
					t.Errorf("error %v is not an *Error with a fix", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !maps.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParseLongLine(t *testing.T) {
	_, err := Parse(strings.NewReader("A="+strings.Repeat("x", maxLine+1)), "f")
	if err == nil || !strings.Contains(err.Error(), "longer than") {
		t.Fatalf("error %v, want a line-too-long error", err)
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	got, err := Load(filepath.Join(dir, "missing"))
	if err != nil || got == nil || len(got) != 0 {
		t.Fatalf("missing file: %v, %v; want an empty map and no error", got, err)
	}
	path := filepath.Join(dir, "stockaderc")
	if err := os.WriteFile(path, []byte("A=1\nbad line\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(path); err == nil || !strings.Contains(err.Error(), path+":2:") {
		t.Errorf("error %v, want it to name %s:2", err, path)
	}
	if _, err := Load(dir); err == nil {
		t.Errorf("loading a directory: no error")
	}
}

func TestMerge(t *testing.T) {
	env := map[string]string{"A": "env", "B": "env", "C": "env", "D": "env"}
	global := map[string]string{"B": "global", "C": "global", "D": "global"}
	project := map[string]string{"C": "project", "D": "project"}
	envFile := map[string]string{"D": "envfile"}
	got := Merge(env, global, nil, project, envFile)
	want := map[string]string{"A": "env", "B": "global", "C": "project", "D": "envfile"}
	if !maps.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if got := Merge(); got == nil || len(got) != 0 {
		t.Errorf("Merge() = %v, want an empty map", got)
	}
}

func TestGlobalPath(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", "/x/cfg")
	got, err := GlobalPath()
	if err != nil || got != "/x/cfg/stockade/stockaderc" {
		t.Errorf("GlobalPath() = %q, %v", got, err)
	}
}
