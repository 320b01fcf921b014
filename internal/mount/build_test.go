package mount

import (
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// tree creates files (trailing "/" = directory) under a temp dir.
func tree(t *testing.T, paths ...string) string {
	t.Helper()
	root := t.TempDir()
	for _, p := range paths {
		full := filepath.Join(root, p)
		if p[len(p)-1] == '/' {
			os.MkdirAll(full, 0o755)
			continue
		}
		os.MkdirAll(filepath.Dir(full), 0o755)
		if err := os.WriteFile(full, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return root
}

func find(p Plan, target string) (Mount, bool) {
	for _, m := range p.Mounts {
		if m.Target == target {
			return m, true
		}
	}
	return Mount{}, false
}

func TestBuildWorkdir(t *testing.T) {
	wd := tree(t, ".env", ".env.local", ".env.example", "src/main.go", ".git/hooks/", ".git/config",
		".vscode/settings.json", ".cursor/rules/x.mdc", "secrets/.aws/credentials", ".npmrc")
	os.Symlink("/etc/passwd", filepath.Join(wd, ".netrc"))
	plan, err := Build(Config{
		Workdir: wd, Home: "/home/u", HomeSource: "/data/home",
		Protect: []string{".git/hooks/", ".git/config", ".vscode/", ".cursor/rules/", "CLAUDE.md", ".env"},
		Mask:    []string{".env", ".env.*", ".npmrc", ".netrc", ".aws/"},
		Unmask:  []string{".env.example"},
	}, OS{})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		target string
		want   Kind // "" = must not be in the plan
		ro     bool
		why    string
	}{
		{wd, Bind, false, "workdir"},
		{"/home/u", Bind, false, "sandbox HOME"},
		{wd + "/.env", Empty, false, "mask"}, // mask wins over protect
		{wd + "/.env.local", Empty, false, "mask"},
		{wd + "/.env.example", "", false, ""}, // unmasked
		{wd + "/.npmrc", Empty, false, "mask"},
		{wd + "/.netrc", Empty, false, "mask"},       // a symlink is masked itself
		{wd + "/secrets/.aws", Empty, false, "mask"}, // patterns apply at every depth
		{wd + "/.git/hooks", Bind, true, "protect"},
		{wd + "/.git/config", Bind, true, "protect"},
		{wd + "/.git", Bind, false, "pin parent of protected path"},
		{wd + "/.vscode", Bind, true, "protect"},
		{wd + "/.cursor/rules", Bind, true, "protect"},
		{wd + "/.cursor", Bind, false, "pin parent of protected path"},
		{wd + "/CLAUDE.md", "", false, ""}, // absent
		{"/etc", Bind, true, "system"},
		{"/proc", Proc, false, ""},
		{"/tmp", Tmpfs, false, ""},
		{"/proc/kcore", Empty, false, ""},
		{"/proc/sys", Bind, true, ""},
	}
	for _, tt := range tests {
		m, ok := find(plan, tt.target)
		switch {
		case tt.want == "" && ok:
			t.Errorf("%s: in the plan as %+v, want absent", tt.target, m)
		case tt.want == "":
		case !ok:
			t.Errorf("%s: missing from the plan", tt.target)
		case m.Kind != tt.want || m.ReadOnly != tt.ro || (tt.why != "" && m.Why != tt.why):
			t.Errorf("%s: got %s ro=%v why=%q, want %s ro=%v why=%q", tt.target, m.Kind, m.ReadOnly, m.Why, tt.want, tt.ro, tt.why)
		}
	}
}

// TestBuildOrder: every mount comes after the mount of each of its parents.
func TestBuildOrder(t *testing.T) {
	wd := tree(t, ".git/hooks/", ".env")
	plan, err := Build(Config{Workdir: wd, Home: filepath.Dir(wd), HomeSource: "/data/home",
		Protect: []string{".git/hooks/"}, Mask: []string{".env"}}, OS{})
	if err != nil {
		t.Fatal(err)
	}
	seen := []string{}
	for _, m := range plan.Mounts {
		for _, s := range seen {
			if within(s, m.Target) && s != m.Target {
				t.Errorf("%s is mounted before its parent %s", s, m.Target)
			}
		}
		seen = append(seen, m.Target)
	}
	if !slices.ContainsFunc(plan.Mounts, func(m Mount) bool { return m.Target == "/etc/shadow" && m.Kind == Empty }) {
		if _, err := os.Stat("/etc/shadow"); err == nil {
			t.Error("/etc/shadow is not masked")
		}
	}
}

func TestScanRefusesEscapes(t *testing.T) {
	wd := tree(t, "a/.env")
	outside := tree(t, ".env")
	sc := ScanTrees(Config{Workdir: wd, Mask: []string{outside + "/.env", "../.env", "a/../../.env"}}, OS{})
	if len(sc.Mask) != 0 {
		t.Errorf("masks = %+v, want none", sc.Mask)
	}
	sc = ScanTrees(Config{Workdir: wd, Mask: []string{"a/.env"}}, OS{})
	if len(sc.Mask) != 1 || sc.Mask[0].Path != wd+"/a/.env" {
		t.Errorf("masks = %+v, want only %s/a/.env", sc.Mask, wd)
	}
}

// TestBuildTmpfsBudget: the writable tmpfs mounts hold TmpfsSize together,
// each with a size and an inode limit, never size=0 (no limit).
func TestBuildTmpfsBudget(t *testing.T) {
	writable := []string{"/tmp", "/var", "/run", "/dev/shm"}
	tests := []struct {
		total int64
		want  map[string]string
	}{
		{4 << 30, map[string]string{
			"/tmp":     "mode=1777,size=2147483648,nr_inodes=524288",
			"/var":     "mode=0755,size=1073741824,nr_inodes=262144",
			"/run":     "mode=0755,size=536870912,nr_inodes=131072",
			"/dev/shm": "mode=1777,size=536870912,nr_inodes=131072",
		}},
		{32 << 20, map[string]string{
			"/tmp": "mode=1777,size=16777216,nr_inodes=4096", "/dev/shm": "mode=1777,size=4194304,nr_inodes=1024",
		}},
		{100, map[string]string{"/tmp": "mode=1777,size=4096,nr_inodes=1", "/run": "mode=0755,size=4096,nr_inodes=1"}},
		{0, map[string]string{"/tmp": "mode=1777", "/var": "mode=0755"}},
	}
	for _, tt := range tests {
		plan, err := Build(Config{Workdir: t.TempDir(), TmpfsSize: tt.total}, OS{})
		if err != nil {
			t.Fatal(err)
		}
		var sum int64
		for _, target := range writable {
			m, ok := find(plan, target)
			if !ok || m.Kind != Tmpfs {
				t.Fatalf("total %d: %s is not a tmpfs in the plan: %+v", tt.total, target, m)
			}
			if want, ok := tt.want[target]; ok && m.Data != want {
				t.Errorf("total %d: %s data %q, want %q", tt.total, target, m.Data, want)
			}
			var size int64
			for _, opt := range strings.Split(m.Data, ",") {
				if v, ok := strings.CutPrefix(opt, "size="); ok {
					size, _ = strconv.ParseInt(v, 10, 64)
				}
			}
			if tt.total > 0 && size == 0 {
				t.Errorf("total %d: %s has no size: %q", tt.total, target, m.Data)
			}
			sum += size
		}
		if tt.total >= 4096*8 && sum > tt.total {
			t.Errorf("total %d: the mounts hold %d together", tt.total, sum)
		}
	}
	var shares int64
	for _, s := range tmpfsShares {
		shares += s
	}
	if shares != 8 || len(tmpfsShares) != len(writable) {
		t.Errorf("tmpfsShares %v: want eighths of the budget that add up to one, for %v", tmpfsShares, writable)
	}
}

// TestTun: /dev/net/tun is in the plan only for a container engine.
func TestTun(t *testing.T) {
	for _, tun := range []bool{false, true} {
		plan, err := Build(Config{Workdir: t.TempDir(), Tun: tun}, OS{})
		if err != nil {
			t.Fatal(err)
		}
		m, ok := find(plan, TunDevice)
		if ok != tun || ok && (m.Kind != Device || m.Source != TunDevice) {
			t.Errorf("Tun %v: %s in the plan: %v %+v", tun, TunDevice, ok, m)
		}
	}
}

// TestSystemHide: the paths of SystemHide that exist are masked, a
// directory as a directory; a missing one and a symbolic link are left
// out, and without SystemHide nothing is.
func TestSystemHide(t *testing.T) {
	root := tree(t, "etc/slurm/slurm.conf", "usr/bin/sbatch")
	if err := os.Symlink("sbatch", filepath.Join(root, "usr/bin/srun")); err != nil {
		t.Fatal(err)
	}
	hide := []string{root + "/etc/slurm", root + "/usr/bin/sbatch", root + "/usr/bin/srun", root + "/usr/bin/squeue"}
	for _, withHide := range []bool{false, true} {
		cfg := Config{Workdir: t.TempDir()}
		if withHide {
			cfg.SystemHide = hide
		}
		plan, err := Build(cfg, OS{})
		if err != nil {
			t.Fatal(err)
		}
		for i, p := range hide {
			m, ok := find(plan, p)
			want := withHide && i < 2
			if ok != want || ok && (m.Kind != Empty || m.IsDir != (i == 0)) {
				t.Errorf("SystemHide %v: %s in the plan: %v %+v, want %v", withHide, p, ok, m, want)
			}
		}
	}
}
