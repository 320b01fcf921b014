package policy

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

func TestFromEnv(t *testing.T) {
	cwd := t.TempDir()
	os.Mkdir(filepath.Join(cwd, "a"), 0o755)
	os.Mkdir(filepath.Join(cwd, "b"), 0o755)
	env := []string{
		"STOCKADE_RO=a:" + cwd + "/b::",
		"STOCKADE_RW=b",
		"STOCKADE_PROTECT=x/:y",
		"STOCKADE_MASK=.secret",
		"STOCKADE_UNMASK=.env.example",
		"STOCKADE_ENV=GOFLAGS,FOO=a b",
		"STOCKADE_ALLOW_HOOKS=1",
		"STOCKADE_SHARED_HOME=true",
		"STOCKADE_MEMORY=512M",
		"STOCKADE_CPUS=1.5",
		"STOCKADE_PIDS=64",
		"STOCKADE_LOG_LEVEL=info",
		"STOCKADE_NETWORK=none",
		"STOCKADE_WORKDIR=a",
		"STOCKADE_MUST_WORK=1", // not a policy variable: ignored
		"STOCKADE_BIN=/x",
		"STOCKADE_CPUS_TYPO=zzz",
		"MEMORY=lots",
	}
	got, err := FromEnv(env, cwd)
	if err != nil {
		t.Fatal(err)
	}
	want := Layer{
		Kind: KindEnv, Source: "env",
		Workdir:    ptr(filepath.Join(cwd, "a")),
		RO:         []string{filepath.Join(cwd, "a"), filepath.Join(cwd, "b")},
		RW:         []string{filepath.Join(cwd, "b")},
		Protect:    []string{"x/", "y"},
		Mask:       []string{".secret"},
		Unmask:     []string{".env.example"},
		Env:        []string{"GOFLAGS", "FOO=a b"},
		AllowHooks: ptr(true),
		SharedHome: ptr(true),
		Memory:     ptr(int64(512 << 20)),
		CPUs:       ptr(1.5),
		Pids:       ptr(int64(64)),
		LogLevel:   ptr("info"),
		Network:    ptr("none"),
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("FromEnv:\n got %+v\nwant %+v", got, want)
	}
	empty, err := FromEnv([]string{"STOCKADE_MEMORY=", "STOCKADE_RO="}, cwd)
	if err != nil || !reflect.DeepEqual(empty, Layer{Kind: KindEnv, Source: "env"}) {
		t.Errorf("empty variables should be unset: %+v, %v", empty, err)
	}
}

func TestFromFlags(t *testing.T) {
	cwd := t.TempDir()
	os.Mkdir(filepath.Join(cwd, "d"), 0o755)
	got, err := FromFlags(Flags{
		RO:         []string{"d"},
		Env:        []string{"A=1,2"},
		AllowHooks: ptr(false),
		Memory:     ptr("2g"),
		Pids:       ptr("10"),
		Workdir:    ptr("."),
	}, cwd)
	if err != nil {
		t.Fatal(err)
	}
	want := Layer{
		Kind: KindFlag, Source: "flag",
		Workdir:    ptr(cwd),
		RO:         []string{filepath.Join(cwd, "d")},
		Env:        []string{"A=1,2"},
		AllowHooks: ptr(false),
		Memory:     ptr(int64(2 << 30)),
		Pids:       ptr(int64(10)),
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("FromFlags:\n got %+v\nwant %+v", got, want)
	}
}

func TestEnvAndFlagErrors(t *testing.T) {
	cwd := t.TempDir()
	tests := []struct {
		name  string
		env   []string
		flags Flags
		want  string
	}{
		{name: "env memory", env: []string{"STOCKADE_MEMORY=lots"},
			want: `env STOCKADE_MEMORY: "lots" is not a size; write a number with k, m, g or t (e.g. "2g")`},
		{name: "env memory zero", env: []string{"STOCKADE_MEMORY=0"},
			want: `env STOCKADE_MEMORY: "0" must be greater than 0; unset STOCKADE_MEMORY for no limit`},
		{name: "env cpus", env: []string{"STOCKADE_CPUS=-1"},
			want: `env STOCKADE_CPUS: "-1" must be greater than 0`},
		{name: "env pids", env: []string{"STOCKADE_PIDS=0"},
			want: `env STOCKADE_PIDS: "0" must be greater than 0; unset STOCKADE_PIDS for no limit`},
		{name: "env hooks", env: []string{"STOCKADE_ALLOW_HOOKS=yes"},
			want: `env STOCKADE_ALLOW_HOOKS: "yes" is not a boolean; write true, false, 1 or 0`},
		{name: "env log level", env: []string{"STOCKADE_LOG_LEVEL=loud"},
			want: `env STOCKADE_LOG_LEVEL: "loud" is not a log level; use one of: debug, info, warn, error`},
		{name: "env network", env: []string{"STOCKADE_NETWORK=host"},
			want: `env STOCKADE_NETWORK: "host" is not a network mode; use one of: proxy, none`},
		{name: "env ro", env: []string{"STOCKADE_RO=missing"},
			want: `env STOCKADE_RO: "missing" (` + cwd + `/missing) does not exist; create it or remove the entry`},
		{name: "env mask", env: []string{"STOCKADE_MASK=../up"},
			want: `env STOCKADE_MASK: "../up" is not inside the workdir`},
		{name: "env env", env: []string{"STOCKADE_ENV=OK,BAD-NAME=secret"},
			want: `env STOCKADE_ENV: "BAD-NAME" is not a valid variable name`},
		{name: "flag memory", flags: Flags{Memory: ptr("lots")},
			want: `flag --memory: "lots" is not a size; write a number with k, m, g or t (e.g. "2g")`},
		{name: "flag memory without a unit", flags: Flags{Memory: ptr("4")},
			want: `flag --memory: "4" is a size without a unit; write it with k, m, g or t (e.g. "4g")`},
		{name: "flag memory zero", flags: Flags{Memory: ptr("0")},
			want: `flag --memory: "0" must be greater than 0; drop --memory for no limit`},
		{name: "flag cpus", flags: Flags{CPUs: ptr("two")},
			want: `flag --cpus: "two" is not a number of CPUs`},
		{name: "flag pids", flags: Flags{Pids: ptr("1.5")},
			want: `flag --pids: "1.5" is not a whole number`},
		{name: "flag log level", flags: Flags{LogLevel: ptr("loud")},
			want: `flag --log-level: "loud" is not a log level`},
		{name: "flag rw", flags: Flags{RW: []string{"/does/not/exist"}},
			want: `flag --rw: "/does/not/exist" (/does/not/exist) does not exist; create it or remove the entry`},
		{name: "flag unmask", flags: Flags{Unmask: []string{""}},
			want: `flag --unmask: "" is empty`},
		{name: "flag workdir", flags: Flags{Workdir: ptr("")},
			want: `flag --workdir: "" is empty; write a path`},
		{name: "flag env", flags: Flags{Env: []string{"=x"}},
			want: `flag --env: "" is not a valid variable name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var err error
			if tt.env != nil {
				_, err = FromEnv(tt.env, cwd)
			} else {
				_, err = FromFlags(tt.flags, cwd)
			}
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error = %v\nwant it to contain %s", err, tt.want)
			}
			if err != nil && strings.Contains(err.Error(), "secret") {
				t.Errorf("error %q shows an env value", err)
			}
		})
	}
}
