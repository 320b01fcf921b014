package engine

import (
	"errors"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/stockade-dev/stockade/internal/testenv"
)

// TestCheckSubIDs: a user without subordinate ids in one file or both is
// told which file has none and the usermod line that adds a free range to
// both; with them, the engine is planned from them.
func TestCheckSubIDs(t *testing.T) {
	name := strconv.Itoa(os.Getuid())
	if u, err := user.Current(); err == nil {
		name = u.Username
	}
	dir := t.TempDir()
	file := func(base, content string) string {
		p := filepath.Join(dir, base)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	mine := name + ":300000:65536\n"
	others := "someone:100000:65536\nelse:165536:65536\n" // FreeStart: 231072
	own, none := file("own", others+mine), file("none", others)
	short := file("short", others+name+":400000:1000\n") // too few for an image's ids

	if _, err := check(own, own); err != nil {
		var m *Missing
		if errors.As(err, &m) {
			testenv.SkipOrFail(t, "the engine cannot run here for another reason: %v", err)
			return
		}
		t.Fatalf("check with %s's ids: %v", name, err)
	}
	h, _ := check(own, own)
	if len(h.UIDs.Sandbox) == 0 || len(h.GIDs.Sandbox) == 0 || h.Name != name {
		t.Errorf("check with %s's ids planned %+v", name, h)
	}

	// The new range starts above every range of both files.
	fix := func(r string) string { return "usermod --add-subuids " + r + " --add-subgids " + r + " " + name }
	for _, c := range []struct {
		name           string
		subuid, subgid string
		what, fix      string
	}{
		{"neither", none, none, "none in " + none + ", none in " + none, fix("231072-296607")},
		{"no gids", own, none, "none in " + none, fix("365536-431071")},
		{"no uids", none, own, "none in " + none, fix("365536-431071")},
		{"too few", short, short, "none in " + short + ", none in " + short, fix("401000-466535")},
	} {
		_, err := check(c.subuid, c.subgid)
		var m *Missing
		if !errors.As(err, &m) {
			t.Errorf("%s: check = %v, want a Missing", c.name, err)
			continue
		}
		if want := "65536 subordinate uids and gids for " + name + " (" + c.what + ")"; m.What != want {
			t.Errorf("%s: what is missing:\n %q\nwant\n %q", c.name, m.What, want)
		}
		if m.Fix != c.fix {
			t.Errorf("%s: fix:\n %q\nwant\n %q", c.name, m.Fix, c.fix)
		}
	}
}
