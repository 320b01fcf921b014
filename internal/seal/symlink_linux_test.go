package seal

import (
	"github.com/stockade-dev/stockade/internal/testenv"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDenyThroughSymlink: a deny or an allow written through a symbolic
// link still keeps the denied file out. Landlock follows the link when it
// opens an allow's path, so a deny compared with the allows as written
// (not as resolved) would be split around a path that is not there and
// leave the real one granted, as on systems where /home is a link to
// /var/home.
func TestDenyThroughSymlink(t *testing.T) {
	testenv.StaticOnly(t, "it runs the test binary under a policy that lets only that binary execute, a static one")
	bin, _ := filepath.Abs(os.Args[0])
	links := func(work string) {
		os.Symlink("secret", filepath.Join(work, "alias"))
		os.Symlink(work, work+".link")
	}
	tests := []struct{ name, policy string }{
		{"deny through a link", `{"filesystem": {"allow": [
			{"path": "@WORK@", "access": "readwrite"},
			{"path": "@BIN@", "access": "execute"}], "deny": ["@WORK@/alias/key"]}}`},
		{"allow through a link", `{"filesystem": {"allow": [
			{"path": "@WORK@.link", "access": "readwrite"},
			{"path": "@BIN@", "access": "execute"}], "deny": ["@WORK@/secret"]}}`},
		{"allow of a link to the denied directory", `{"filesystem": {"allow": [
			{"path": "@WORK@/alias", "access": "readwrite"},
			{"path": "@BIN@", "access": "execute"}], "deny": ["@WORK@/secret"]}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runSeal(t, sealRun{policy: tt.policy, mode: 0o600, setup: links,
				args: []string{bin, "read:@WORK@/secret/key"}})
			if r.code != 0 || strings.TrimSpace(r.stdout) != "EACCES" {
				t.Errorf("reading the denied key: exit %d, stdout %q (want EACCES)\nstderr %s", r.code, r.stdout, r.stderr)
			}
		})
	}
}
