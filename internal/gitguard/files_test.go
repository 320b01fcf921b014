package gitguard

import (
	"strings"
	"testing"
)

func TestParsePointer(t *testing.T) {
	cases := []struct {
		in, want string
		ok       bool
	}{
		{"gitdir: ../.git/modules/lib\n", "../.git/modules/lib", true},
		{"gitdir: /abs/x\r\n", "/abs/x", true},
		{"gitdir: a b\n", "a b", true},
		{"gitdir:x\n", "", false}, // git wants the space
		{"GITDIR: x\n", "", false},
		{"gitdir: \n", "", false},
		{"", "", false},
	}
	for _, tc := range cases {
		got, ok := parsePointer([]byte(tc.in))
		if got != tc.want || ok != tc.ok {
			t.Errorf("parsePointer(%q) = %q, %v; want %q, %v", tc.in, got, ok, tc.want, tc.ok)
		}
	}
}

func TestAttributeDrivers(t *testing.T) {
	in := "# filter=comment\n*.bin binary\n*.c diff=cpp\n* -diff\n*.x   filter=evil\n[attr]m merge=ours\n*.y text eol=lf\n*.z diff\n"
	got := attributeDrivers([]byte(in))
	want := []string{"line 3: *.c diff=cpp", "line 5: *.x   filter=evil", "line 6: [attr]m merge=ours"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("attributeDrivers = %q, want %q", got, want)
	}
}

func TestTodoExecs(t *testing.T) {
	in := "pick abc one\nexec make test\n# exec commented\nx touch /tmp/m\nfixup def\n  exec  indented\n"
	got := todoExecs([]byte(in))
	want := []string{"line 2: exec make test", "line 4: x touch /tmp/m", "line 6: exec  indented"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("todoExecs = %q, want %q", got, want)
	}
}

func TestRemoteURLs(t *testing.T) {
	if got := remoteURLs([]byte("URL: ext::sh\nPull: refs/heads/*:refs/x/*\n"), false); strings.Join(got, "|") != "ext::sh" {
		t.Errorf("remotes file: %q", got)
	}
	if got := remoteURLs([]byte("https://x/r.git#main\n"), true); strings.Join(got, "|") != "https://x/r.git" {
		t.Errorf("branches file: %q", got)
	}
}
