package environ

import (
	"slices"
	"strings"
	"testing"
)

// TestTables checks the data tables against each other: an allowlisted name
// that is also credential-shaped would be dead weight, and a duplicate or
// malformed pattern is a typo.
func TestTables(t *testing.T) {
	seen := map[string]bool{}
	for _, n := range allowNames {
		if seen[n] {
			t.Errorf("allowNames: duplicate %q", n)
		}
		seen[n] = true
		if !validName(n) || strings.ToUpper(n) != n {
			t.Errorf("allowNames: %q is not an upper-case variable name", n)
		}
		if IsCredentialName(n) {
			t.Errorf("allowNames: %q is credential-shaped and could never pass", n)
		}
	}
	for _, p := range allowPrefixes {
		if IsCredentialName(p + "X") {
			t.Errorf("allowPrefixes: %q names are credential-shaped", p)
		}
	}
	seen = map[string]bool{}
	for _, p := range credentialPatterns {
		if seen[p] {
			t.Errorf("credentialPatterns: duplicate %q", p)
		}
		seen[p] = true
		core := strings.Trim(p, "*")
		if core == "" || strings.Contains(core, "*") || strings.ToUpper(p) != p {
			t.Errorf("credentialPatterns: %q must be upper case with '*' only at the ends", p)
		}
	}
}

func TestIsCredentialName(t *testing.T) {
	tests := []struct {
		name string
		want bool
	}{
		{"GITHUB_TOKEN", true},
		{"github_token", true},
		{"AWS_SECRET_ACCESS_KEY", true},
		{"AWS_PROFILE", true},
		{"SSH_AUTH_SOCK", true},
		{"MY_API_KEY", true},
		{"DB_PASSWORD", true},
		{"PGPASSWORD", true},
		{"GOOGLE_APPLICATION_CREDENTIALS", true},
		{"CI_JOB_TOKEN", true},
		{"NPM_TOKEN", true},
		{"KUBECONFIG", true},
		{"ANTHROPIC_BASE_URL", true},
		{"OPENAI_API_KEY", true},
		{"VAULT_ADDR", true},
		{"SENTRY_DSN", true},
		{"PATH", false},
		{"HOME", false},
		{"TERM", false},
		{"LC_ALL", false},
		{"KEYBOARD", false},
		{"TOKENIZERS_PARALLELISM", false},
		{"GOPATH", false},
		{"OLDPWD", false},
	}
	for _, tt := range tests {
		if got := IsCredentialName(tt.name); got != tt.want {
			t.Errorf("IsCredentialName(%q) = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestParseEntry(t *testing.T) {
	tests := []struct {
		entry     string
		name, val string
		hasValue  bool
		wantErr   string
	}{
		{entry: "FOO", name: "FOO"},
		{entry: "FOO=bar", name: "FOO", val: "bar", hasValue: true},
		{entry: "FOO=", name: "FOO", hasValue: true},
		{entry: "FOO=a=b", name: "FOO", val: "a=b", hasValue: true},
		{entry: "_x1", name: "_x1"},
		{entry: "", wantErr: "not a valid variable name"},
		{entry: "=x", wantErr: "not a valid variable name"},
		{entry: "1FOO", wantErr: "not a valid variable name"},
		{entry: "BASH_FUNC_x%%", wantErr: "not a valid variable name"},
		{entry: "FOO=a\x00b", wantErr: "NUL"},
	}
	for _, tt := range tests {
		name, val, hasValue, err := ParseEntry(tt.entry)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("ParseEntry(%q) error = %v, want %q", tt.entry, err, tt.wantErr)
			}
			continue
		}
		if err != nil || name != tt.name || val != tt.val || hasValue != tt.hasValue {
			t.Errorf("ParseEntry(%q) = %q, %q, %v, %v; want %q, %q, %v", tt.entry, name, val, hasValue, err, tt.name, tt.val, tt.hasValue)
		}
	}
}

var host = []string{
	"PATH=/host/bin",
	"HOME=/home/u",
	"TERM=xterm-256color",
	"LANG=en_US.UTF-8",
	"LC_ALL=C.UTF-8",
	"TMPDIR=/var/tmp/u",
	"AWS_SECRET_ACCESS_KEY=s3cr3t",
	"GITHUB_TOKEN=ghp_x",
	"SSH_AUTH_SOCK=/run/user/1000/ssh",
	"LD_PRELOAD=/evil.so",
	"BASH_FUNC_x%%=() { echo pwned; }",
	"EDITOR=vim",
	"NOEQUALS",
	"=C:=C:\\",
	"MYVAR=mine",
}

func TestBuild(t *testing.T) {
	tests := []struct {
		name        string
		host        []string
		pass        []string
		extra       map[string]string
		want        []string // NAME=VALUE that must be present
		wantAbsent  []string // names that must be absent
		wantDropped []string // names that must be reported as dropped
	}{
		{
			name: "allowlist",
			host: host,
			want: []string{"PATH=/host/bin", "HOME=/home/u", "TERM=xterm-256color",
				"LANG=en_US.UTF-8", "LC_ALL=C.UTF-8", "EDITOR=vim"},
			wantAbsent: []string{"AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "SSH_AUTH_SOCK",
				"LD_PRELOAD", "BASH_FUNC_x%%", "TMPDIR", "MYVAR", "NOEQUALS", ""},
			wantDropped: []string{"AWS_SECRET_ACCESS_KEY", "GITHUB_TOKEN", "SSH_AUTH_SOCK",
				"LD_PRELOAD", "BASH_FUNC_x%%", "TMPDIR", "MYVAR"},
		},
		{
			name:       "pass by name lets a credential through",
			host:       host,
			pass:       []string{"GITHUB_TOKEN", "MYVAR"},
			want:       []string{"GITHUB_TOKEN=ghp_x", "MYVAR=mine"},
			wantAbsent: []string{"AWS_SECRET_ACCESS_KEY"},
		},
		{
			name:       "pass by name of an unset variable sets nothing",
			host:       host,
			pass:       []string{"NOT_SET_ANYWHERE"},
			wantAbsent: []string{"NOT_SET_ANYWHERE"},
		},
		{
			name: "pass with value beats pass by name and allowlist",
			host: host,
			pass: []string{"TERM=dumb", "MYVAR=theirs", "MYVAR"},
			want: []string{"TERM=dumb", "MYVAR=theirs"},
		},
		{
			name: "later pass with value wins",
			host: host,
			pass: []string{"FOO=1", "FOO=2"},
			want: []string{"FOO=2"},
		},
		{
			name:  "extra beats everything",
			host:  host,
			pass:  []string{"HOME=/elsewhere", "TMPDIR=/x"},
			extra: map[string]string{"HOME": "/sandbox/home", "TMPDIR": "/tmp", "STOCKADE_SANDBOX": "1"},
			want:  []string{"HOME=/sandbox/home", "TMPDIR=/tmp", "STOCKADE_SANDBOX=1"},
		},
		{
			name: "default PATH when the host has none",
			host: []string{"HOME=/home/u"},
			want: []string{"PATH=" + DefaultPath},
		},
		{
			name: "allowlisted name from pass keeps working",
			host: []string{"PATH=/a"},
			pass: []string{"PATH=/b"},
			want: []string{"PATH=/b"},
		},
		{
			name:        "invalid pass and extra entries are dropped",
			host:        host,
			pass:        []string{"BASH_FUNC_x%%", "=x", "1BAD=hunter2"},
			extra:       map[string]string{"A=B": "c", "": "d"},
			wantAbsent:  []string{"BASH_FUNC_x%%", "1BAD", "A"},
			wantDropped: []string{"BASH_FUNC_x%%", "1BAD", "A=B"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env, dropped := Build(tt.host, tt.pass, tt.extra)
			checkWellFormed(t, env)
			names := map[string]string{}
			for _, kv := range env {
				n, v, _ := strings.Cut(kv, "=")
				names[n] = v
			}
			for _, w := range tt.want {
				if !slices.Contains(env, w) {
					t.Errorf("missing %q in %q", w, env)
				}
			}
			for _, n := range tt.wantAbsent {
				if v, ok := names[n]; ok {
					t.Errorf("%s=%s should have been dropped", n, v)
				}
			}
			for _, n := range tt.wantDropped {
				if !slices.Contains(dropped, n) {
					t.Errorf("dropped = %q, want it to contain %q", dropped, n)
				}
			}
			for _, d := range dropped {
				if strings.Contains(d, "hunter2") || strings.Contains(d, "s3cr3t") {
					t.Errorf("dropped shows a value: %q", d)
				}
			}
			if !slices.IsSorted(dropped) {
				t.Errorf("dropped not sorted: %q", dropped)
			}
		})
	}
}

// checkWellFormed asserts the invariants every Build result must hold.
func checkWellFormed(t *testing.T, env []string) {
	t.Helper()
	if !slices.IsSorted(env) {
		t.Errorf("env not sorted: %q", env)
	}
	seen := map[string]bool{}
	for _, kv := range env {
		n, _, ok := strings.Cut(kv, "=")
		if !ok || !validName(n) {
			t.Errorf("malformed entry %q", kv)
		}
		if seen[n] {
			t.Errorf("duplicate name %q", n)
		}
		seen[n] = true
	}
	if !seen["PATH"] {
		t.Errorf("no PATH in %q", env)
	}
}
