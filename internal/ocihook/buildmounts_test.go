package ocihook

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

// engineMountinfo is the engine's mountinfo as the runtime sees it for a
// build step (taken from a session, trimmed): the engine's root, its /run,
// /sys and configuration, the kept storage, and buildah's binds.
const engineMountinfo = `100 99 0:40 / / ro,nosuid,nodev,relatime - tmpfs tmpfs ro
101 100 0:55 / /run rw,nosuid,nodev,relatime - tmpfs tmpfs rw
102 100 0:56 / /sys rw,nosuid,nodev,relatime - tmpfs tmpfs rw
103 102 0:60 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw
104 100 0:57 / /stockade-engine ro,nosuid,nodev,relatime - tmpfs tmpfs ro
105 104 254:0 /home/u/.local/share/stockade/engine/p-1 /stockade-engine/storage rw - ext4 /dev/vda rw
106 101 0:55 /engine/tmp/libpod_builder1/build/f /run/engine/tmp/buildah1/mnt/buildah-bind-target-0 rw - tmpfs tmpfs rw
107 101 254:0 /home/u/.local/share/stockade/engine/p-1/vfs/dir/d10ff89658159ac3aba541ee7fe139161d7f156f2caf0c4a84e2caa3c37ec705/a /run/engine/tmp/buildah2/mnt/buildah-bind-target-0 rw - ext4 /dev/vda rw
108 101 0:40 / /run/engine/tmp/buildah3/mnt/buildah-bind-target-0 ro - tmpfs tmpfs ro
109 108 0:46 / /run/engine/tmp/buildah3/mnt/buildah-bind-target-0/dev rw - tmpfs tmpfs rw
110 101 0:57 /storage /run/engine/tmp/buildah4/mnt/buildah-bind-target-0 rw - tmpfs tmpfs rw
111 101 254:0 /home/u/.local/share/stockade/engine/p-1 /run/engine/tmp/buildah5/mnt/buildah-bind-target-0 rw - ext4 /dev/vda rw
112 101 0:55 /engine/tmp /run/engine/tmp/buildah6/mnt/buildah-bind-target-0 rw - tmpfs tmpfs rw
113 101 0:55 /engine/tmp/buildah-cache-0/9f /run/engine/tmp/buildah7/mnt/buildah\040bind rw - tmpfs tmpfs rw
114 101 0:55 /user/0 /run/engine/tmp/buildah8/mnt/buildah-bind-target-0 rw - tmpfs tmpfs rw
115 101 254:0 /home/u/.local/share/stockade/engine/p-1/vfs-containers /run/engine/tmp/buildah9/mnt/buildah-bind-target-0 rw - ext4 /dev/vda rw
118 101 254:0 /home/u/.local/share/stockade/engine/p-1/vfs-containers/containers.json /run/engine/tmp/buildah10/mnt/buildah-bind-target-0 rw - ext4 /dev/vda rw
119 101 254:0 /home/u/.local/share/stockade/engine/p-1/vfs/dir/short /run/engine/tmp/buildah11/mnt/buildah-bind-target-0 rw - ext4 /dev/vda rw
`

func TestCheckBuildMounts(t *testing.T) {
	f := Facts{Storage: "/stockade-engine/storage", RunRoot: "/run/user/0/containers", Driver: "vfs", Tmp: "/run/engine/tmp"}
	config := func(src string) []byte {
		b, _ := json.Marshal(map[string]any{"mounts": []any{
			map[string]any{"destination": "/proc", "type": "proc", "source": "proc"},
			map[string]any{"destination": "/sys", "type": "bind", "source": "/sys", "options": []string{"rprivate", "ro", "rbind"}},
			map[string]any{"destination": "/etc/hosts", "type": "bind", "source": "/run/engine/tmp/buildah1/hosts", "options": []string{"rbind"}},
			map[string]any{"destination": "/m", "type": "bind", "source": src, "options": []string{"ro", "rbind"}},
		}})
		return b
	}
	for _, src := range []string{
		"/run/engine/tmp/buildah1/mnt/buildah-bind-target-0", // a file of the context
		"/run/engine/tmp/buildah2/mnt/buildah-bind-target-0", // a stage's file
		"/run/engine/tmp/buildah7/mnt/buildah bind",          // a cache, its name escaped
		"/run/engine/tmp/buildah1/run/secrets/s",             // buildah's own file
		"/stockade-engine/storage/vfs-containers/00403d12b1da7dcf1cc6809ef7e87d0f7ba706b332a100f741e5f8cf10718789/userdata/secrets/s", // a build secret
	} {
		if err := CheckBuildMounts(config(src), []byte(engineMountinfo), f); err != nil {
			t.Errorf("%s: %v", src, err)
		}
	}
	for src, want := range map[string]string{
		"/run/engine/tmp/buildah3/mnt/buildah-bind-target-0": "which is / of file system 0:40", // link -> /
		"/run/engine/tmp/buildah4/mnt/buildah-bind-target-0": "0:57",                           // the configuration
		"/run/engine/tmp/buildah5/mnt/buildah-bind-target-0": "p-1 of file system 254:0",       // the storage's root
		"/run/engine/tmp/buildah6/mnt/buildah-bind-target-0": "/engine/tmp of",                 // the whole TMPDIR
		"/run/engine/tmp/buildah8/mnt/buildah-bind-target-0": "/user/0",                        // the engine's runtime dir
		"/run/engine/tmp/buildah9/mnt/buildah-bind-target-0": "/vfs-containers of",             // every container's files
		"/stockade-engine": "0:57",
		"/run":             "0:55",
	} {
		var r *Refusal
		err := CheckBuildMounts(config(src), []byte(engineMountinfo), f)
		if !errors.As(err, &r) || r.Check != "mounts" || r.Field != "mounts[3].source" || !strings.Contains(r.Reason, want) {
			t.Errorf("%s: %v, want refused naming %q", src, err, want)
		}
	}
	// A layer bound read-write: the image would change under its digest.
	rw, _ := json.Marshal(map[string]any{"mounts": []any{map[string]any{"destination": "/m", "type": "bind",
		"source": "/run/engine/tmp/buildah2/mnt/buildah-bind-target-0", "options": []string{"rw", "rbind"}}}})
	if err := CheckBuildMounts(rw, []byte(engineMountinfo), f); err == nil || !strings.Contains(err.Error(), "must be read-only") {
		t.Errorf("a layer bound rw: %v", err)
	}
	// A bind that carries a mount below it is refused even from an
	// allowed place.
	carried := engineMountinfo + "117 106 0:70 / /run/engine/tmp/buildah1/mnt/buildah-bind-target-0/x rw - proc proc rw\n"
	if err := CheckBuildMounts(config("/run/engine/tmp/buildah1/mnt/buildah-bind-target-0"), []byte(carried), f); err == nil || !strings.Contains(err.Error(), "carries the mount") {
		t.Errorf("a carried mount: %v", err)
	}
	// A mount later at an ancestor hides what was below it: the context's
	// file is no longer what the runtime would bind.
	shadowed := engineMountinfo + "116 101 0:40 / /run/engine/tmp/buildah1/mnt rw - tmpfs tmpfs rw\n"
	if err := CheckBuildMounts(config("/run/engine/tmp/buildah1/mnt/buildah-bind-target-0"), []byte(shadowed), f); err == nil || !strings.Contains(err.Error(), "/buildah-bind-target-0 of file system 0:40") {
		t.Errorf("a shadowed mount: %v", err)
	}
	if err := CheckBuildMounts(config("/x"), []byte("garbage\n"), f); err == nil {
		t.Error("unreadable mountinfo passed")
	}
}

// TestCheckMounted: a container's binds must be, in its own mount table,
// the file system and path their sources resolve to in the runtime's; a
// source swapped for a link between the runtime's mount and the check is
// refused whichever way the check sees it.
func TestCheckMounted(t *testing.T) {
	defer func(old func(string) (string, error)) { evalSymlinks = old }(evalSymlinks)
	evalSymlinks = func(p string) (string, error) { return p, nil }
	own := `1 0 0:40 / / ro - tmpfs tmpfs ro
2 1 254:0 /home/u/proj /home/u/proj rw - ext4 /dev/vda rw
3 1 0:57 / /stockade-engine ro - tmpfs tmpfs ro
4 3 254:0 /home/u/.local/share/stockade/engine/p-1 /stockade-engine/storage rw - ext4 /dev/vda rw
`
	root := "/stockade-engine/storage/vfs/dir/" + strings.Repeat("b", 64)
	config, _ := json.Marshal(map[string]any{"root": map[string]any{"path": root}, "mounts": []any{
		map[string]any{"destination": "/proc", "type": "proc", "source": "proc"},
		map[string]any{"destination": "/w", "type": "bind", "source": "/home/u/proj/sw", "options": []string{"rbind"}},
		map[string]any{"destination": "/.stockade/stockade", "type": "bind", "source": "/stockade-engine/stockade", "options": []string{"ro", "bind"}},
	}})
	good, err := MountedAsChecked(config, []byte(own))
	if err != nil {
		t.Fatal(err)
	}
	f := Facts{Workdir: "/home/u/proj", SealSource: "/stockade-engine/stockade", Storage: "/stockade-engine/storage", RunRoot: "/run/user/0/containers", Driver: "vfs"}
	if err := CheckMounted(config, good, []byte(own), f); err != nil {
		t.Errorf("as checked: %v", err)
	}
	// The one resolution is judged too: a source that resolves outside
	// the workdir when compared is refused even if the runtime bound
	// exactly that (the checks saw a directory, this resolution the link).
	evalSymlinks = func(p string) (string, error) {
		if p == "/home/u/proj/sw" {
			return "/", nil
		}
		return p, nil
	}
	swapped, _ := MountedAsChecked(config, []byte(own))
	var r *Refusal
	if err := CheckMounted(config, swapped, []byte(own), f); !errors.As(err, &r) || !strings.Contains(r.Reason, "resolves to /, outside the workdir") {
		t.Errorf("resolved outside, bound alike: %v", err)
	}
	evalSymlinks = func(p string) (string, error) { return p, nil }
	ctrRoot := "10 1 254:0 /home/u/.local/share/stockade/engine/p-1/vfs/dir/" + strings.Repeat("b", 64) + " " + root + " rw - ext4 /dev/vda rw\n"
	for name, table := range map[string]string{
		// The runtime followed the link to the engine's root.
		"swapped": own + ctrRoot + "11 10 0:40 / " + root + "/w rw - tmpfs tmpfs rw\n12 10 0:57 /stockade " + root + "/.stockade/stockade ro - tmpfs tmpfs ro\n",
		// Or to another directory of the workdir's file system.
		"elsewhere": own + ctrRoot + "11 10 254:0 /home/u/.ssh " + root + "/w rw - ext4 /dev/vda rw\n12 10 0:57 /stockade " + root + "/.stockade/stockade ro - tmpfs tmpfs ro\n",
		// Or mounted nothing there.
		"missing": own + ctrRoot + "12 10 0:57 /stockade " + root + "/.stockade/stockade ro - tmpfs tmpfs ro\n",
	} {
		var r *Refusal
		if err := CheckMounted(config, []byte(table), []byte(own), f); !errors.As(err, &r) || r.Field != "mounts[1].source" || !strings.Contains(r.Reason, "not /home/u/proj/sw, which was checked") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// TestMountTableOrder: a container's mount table as crun leaves it at
// createRuntime lists the binds under the root before the root's own
// bind, their parent; the walk goes by the tree, not the order.
func TestMountTableOrder(t *testing.T) {
	root := "/stockade-engine/storage/vfs/dir/" + strings.Repeat("1", 64)
	table := `378 1 0:57 / /stockade-engine rw - tmpfs tmpfs rw
1 0 0:40 / / ro - tmpfs tmpfs ro
399 406 254:0 /tmp/p/sw ` + root + `/h rw - ext4 /dev/vda rw
402 406 0:54 /user/0/containers/vfs-containers/c/userdata/hosts ` + root + `/etc/hosts rw - tmpfs tmpfs rw
408 406 0:63 / ` + root + `/dev rw - tmpfs tmpfs rw
403 408 0:59 / ` + root + `/dev/shm rw - tmpfs shm rw
406 378 254:0 /root/.local/share/stockade/engine/p/vfs/dir/` + strings.Repeat("1", 64) + " " + root + ` rw - ext4 /dev/vda rw
`
	mt, err := parseMountinfo([]byte(table))
	if err != nil {
		t.Fatal(err)
	}
	for p, want := range map[string]place{
		root + "/h":          {dev: "254:0", path: "/tmp/p/sw"},
		root + "/h/x":        {dev: "254:0", path: "/tmp/p/sw/x"},
		root + "/etc/hosts":  {dev: "0:54", path: "/user/0/containers/vfs-containers/c/userdata/hosts"},
		root + "/dev/shm":    {dev: "0:59", path: "/"},
		root + "/dev/null":   {dev: "0:63", path: "/null"},
		root + "/etc/passwd": {dev: "254:0", path: "/root/.local/share/stockade/engine/p/vfs/dir/" + strings.Repeat("1", 64) + "/etc/passwd"},
	} {
		if got := mt.at(p); got.dev != want.dev || got.path != want.path {
			t.Errorf("%s: %+v, want %+v", p, got, want)
		}
	}
}

// TestCheckMountedAudit: every mount below the container's root is one
// the config names, or one a checked bind brought along from its source.
func TestCheckMountedAudit(t *testing.T) {
	defer func(old func(string) (string, error)) { evalSymlinks = old }(evalSymlinks)
	evalSymlinks = func(p string) (string, error) { return p, nil }
	own := "1 0 0:40 / / ro - tmpfs tmpfs ro\n" +
		"2 1 254:0 /home/u/proj /home/u/proj rw - ext4 /dev/vda rw\n" +
		"5 2 0:43 /empty-file /home/u/proj/.env ro - tmpfs tmpfs ro\n" +
		"3 1 0:57 / /stockade-engine ro - tmpfs tmpfs ro\n"
	id := strings.Repeat("b", 64)
	root := "/stockade-engine/storage/vfs/dir/" + id
	config, _ := json.Marshal(map[string]any{"root": map[string]any{"path": root}, "mounts": []any{
		map[string]any{"destination": "/w", "type": "bind", "source": "/home/u/proj", "options": []string{"rbind"}},
		map[string]any{"destination": "/w/sw", "type": "bind", "source": "/home/u/proj/sw", "options": []string{"rbind"}},
		map[string]any{"destination": "/proc", "type": "proc", "source": "proc"},
	}, "linux": map[string]any{"devices": []any{map[string]any{"path": "/dev/null"}}}})
	f := Facts{Workdir: "/home/u/proj", Storage: "/stockade-engine/storage", RunRoot: "/run/user/0/containers", Driver: "vfs"}
	base := own + "10 3 254:0 /home/u/.local/share/stockade/engine/p-1/vfs/dir/" + id + " " + root + " rw - ext4 /dev/vda rw\n" +
		"11 10 254:0 /home/u/proj " + root + "/w rw - ext4 /dev/vda rw\n" +
		"13 10 0:62 / " + root + "/proc rw - proc proc rw\n" +
		"14 10 0:6 /null " + root + "/dev/null rw - devtmpfs devtmpfs rw\n"
	ok := base + "12 11 0:43 /empty-file " + root + "/w/.env ro - tmpfs tmpfs ro\n" +
		"15 11 254:0 /home/u/proj/sw " + root + "/w/sw rw - ext4 /dev/vda rw\n"
	if err := CheckMounted(config, []byte(ok), []byte(own), f); err != nil {
		t.Errorf("as the config says: %v", err)
	}
	for name, table := range map[string]string{
		// The second bind went through sw, a link to /stockade-engine:
		// the engine's directory at the root's /stockade-engine, and the
		// first bind's own directory at the literal /w/sw.
		"stray": base + "12 11 0:43 /empty-file " + root + "/w/.env ro - tmpfs tmpfs ro\n" +
			"16 10 0:57 / " + root + "/stockade-engine rw - tmpfs tmpfs rw\n",
		// Below the workdir's bind, a mount its source does not have.
		"below": ok + "17 11 0:57 / " + root + "/w/x rw - tmpfs tmpfs rw\n",
		// The mask mirrored with the wrong file system.
		"mask": base + "12 11 0:57 /empty-file " + root + "/w/.env ro - tmpfs tmpfs ro\n" +
			"15 11 254:0 /home/u/proj/sw " + root + "/w/sw rw - ext4 /dev/vda rw\n",
	} {
		var r *Refusal
		if err := CheckMounted(config, []byte(table), []byte(own), f); !errors.As(err, &r) || r.Field != "mountinfo" {
			t.Errorf("%s: %v", name, err)
		}
	}
}
