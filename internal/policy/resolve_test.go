package policy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/stockade-dev/stockade/internal/egress"
)

func TestResolveDefaults(t *testing.T) {
	r, err := Resolve("/w/")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(r.Policy, Default("/w")) {
		t.Errorf("no layers:\n got %+v\nwant %+v", r.Policy, Default("/w"))
	}
	for k, s := range r.Sources {
		if s != SourceDefault {
			t.Errorf("source of %s = %q, want default", k, s)
		}
	}
	if got := r.ListSources["mask"][0]; got != (Entry{".env", SourceDefault}) {
		t.Errorf("first mask entry = %+v", got)
	}
}

// TestResolveOrder checks that scalars follow precedence whatever order the
// layers are passed in, and that provenance names the winner.
func TestResolveOrder(t *testing.T) {
	admin := Layer{Kind: KindAdmin, Source: "/etc/a.json", Memory: ptr(int64(8 << 30)), LogLevel: ptr("error")}
	user := Layer{Kind: KindUser, Source: "/u.json", Memory: ptr(int64(4 << 30)), Pids: ptr(int64(500)), Workdir: ptr("/user/wd")}
	project := Layer{Kind: KindProject, Source: "/p/.stockade.json", Memory: ptr(int64(3 << 30)), CPUs: ptr(2.0)}
	env := Layer{Kind: KindEnv, Source: "env", Memory: ptr(int64(2 << 30)), CPUs: ptr(1.0)}
	flag := Layer{Kind: KindFlag, Source: "flag", Memory: ptr(int64(1 << 30)), Workdir: ptr("/flag/wd")}

	tests := []struct {
		name        string
		layers      []Layer
		wantMemory  int64
		wantSources map[string]string
	}{
		{"all", []Layer{flag, env, project, user, admin}, 1 << 30, map[string]string{
			"memory": "flag --memory", "cpus": "env STOCKADE_CPUS", "pids": "/u.json",
			"log_level": "/etc/a.json", "workdir": "flag --workdir", "network": SourceDefault,
			"allow_hooks": SourceDefault,
		}},
		{"no flags", []Layer{project, admin, env, user}, 2 << 30, map[string]string{
			"memory": "env STOCKADE_MEMORY", "cpus": "env STOCKADE_CPUS", "workdir": "/u.json",
		}},
		{"files only", []Layer{user, project, admin}, 3 << 30, map[string]string{
			"memory": "/p/.stockade.json", "cpus": "/p/.stockade.json",
		}},
		{"admin only", []Layer{admin}, 8 << 30, map[string]string{
			"memory": "/etc/a.json", "pids": SourceDefault, "workdir": SourceDefault,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, err := Resolve("/cwd", tt.layers...)
			if err != nil {
				t.Fatal(err)
			}
			if r.Policy.Memory != tt.wantMemory {
				t.Errorf("memory = %d, want %d", r.Policy.Memory, tt.wantMemory)
			}
			for k, want := range tt.wantSources {
				if got := r.Sources[k]; got != want {
					t.Errorf("source of %s = %q, want %q", k, got, want)
				}
			}
		})
	}
}

func TestResolveLists(t *testing.T) {
	user := Layer{Kind: KindUser, Source: "/u.json",
		RO: []string{"/a", "/b"}, Mask: []string{".token", ".env"}, Env: []string{"X"}}
	project := Layer{Kind: KindProject, Source: "/.stockade.json",
		RO: []string{"/b", "/c"}, Env: []string{"TZ=UTC"}}
	flag := Layer{Kind: KindFlag, Source: "flag", RO: []string{"/a", "/d"}, AllowHooks: ptr(true),
		Unmask: []string{".env.example", ".token"}}
	r, err := Resolve("/w", flag, project, user)
	if err != nil {
		t.Fatal(err)
	}
	wantRO := []Entry{{"/a", "/u.json"}, {"/b", "/u.json"}, {"/c", "/.stockade.json"}, {"/d", "flag --ro"}}
	if !reflect.DeepEqual(r.ListSources["ro"], wantRO) {
		t.Errorf("ro = %+v, want %+v", r.ListSources["ro"], wantRO)
	}
	if !reflect.DeepEqual(r.Policy.RO, []string{"/a", "/b", "/c", "/d"}) {
		t.Errorf("Policy.RO = %q", r.Policy.RO)
	}
	if !reflect.DeepEqual(r.Policy.Env, []string{"X", "TZ=UTC"}) {
		t.Errorf("Policy.Env = %q", r.Policy.Env)
	}
	if slices.Contains(r.Policy.Mask, ".token") || !slices.Contains(r.Policy.Mask, ".env") {
		t.Errorf("unmask .token should remove only .token: %q", r.Policy.Mask)
	}
	if !reflect.DeepEqual(r.Policy.Unmask, []string{".env.example", ".token"}) {
		t.Errorf("Policy.Unmask = %q", r.Policy.Unmask)
	}
	for _, h := range hookPaths {
		if slices.Contains(r.Policy.Protect, h) {
			t.Errorf("allow_hooks should unprotect %q", h)
		}
	}
	if !slices.Contains(r.Policy.Protect, ".git/config") {
		t.Error("allow_hooks must not unprotect .git/config")
	}
}

// TestResolveAdmin checks that the admin layer is a floor: every loosening
// by a later layer is an error naming both sources.
func TestResolveAdmin(t *testing.T) {
	admin := Layer{Kind: KindAdmin, Source: "/etc/stockade/config.json",
		AllowHooks: ptr(false), SharedHome: ptr(false), GitConfig: ptr(false), Memory: ptr(int64(4 << 30)), CPUs: ptr(2.0), Pids: ptr(int64(1000)),
		Network: ptr("none"), Mask: []string{".corp/", ".env.*"}, Protect: []string{"deploy.yml"}}
	user := func(l Layer) Layer { l.Kind, l.Source = KindUser, "/u.json"; return l }
	flag := func(l Layer) Layer { l.Kind, l.Source = KindFlag, "flag"; return l }
	tests := []struct {
		name  string
		layer Layer
		want  []string // substrings; nil means no error
	}{
		{"lower memory", flag(Layer{Memory: ptr(int64(1 << 30))}), nil},
		{"equal pids", user(Layer{Pids: ptr(int64(1000))}), nil},
		{"hooks false", flag(Layer{AllowHooks: ptr(false)}), nil},
		{"unmask default", flag(Layer{Unmask: []string{".npmrc"}}), nil},
		{"raise memory", flag(Layer{Memory: ptr(int64(8 << 30))}),
			[]string{"flag --memory: 8.0 GiB is not allowed: /etc/stockade/config.json sets memory 4.0 GiB as the most allowed"}},
		{"raise cpus", user(Layer{CPUs: ptr(2.5)}),
			[]string{`/u.json: "cpus": 2.5 is not allowed: /etc/stockade/config.json sets cpus 2 as the most allowed`}},
		{"raise pids", flag(Layer{Pids: ptr(int64(1001))}),
			[]string{"flag --pids: 1001 is not allowed: /etc/stockade/config.json sets pids 1000"}},
		{"allow hooks", user(Layer{AllowHooks: ptr(true)}),
			[]string{`/u.json: "allow_hooks": true is not allowed: /etc/stockade/config.json sets allow_hooks false; remove the setting`}},
		{"shared home", flag(Layer{SharedHome: ptr(true)}),
			[]string{`flag --shared-home: true is not allowed: /etc/stockade/config.json sets shared_home false; remove the setting`}},
		{"gitconfig", flag(Layer{GitConfig: ptr(true)}),
			[]string{`flag --gitconfig: true is not allowed: /etc/stockade/config.json sets gitconfig false; remove the setting`}},
		{"change network", flag(Layer{Network: ptr("proxy")}),
			[]string{`flag --network: "proxy" is not allowed: /etc/stockade/config.json sets network "none"`}},
		{"unmask admin dir", flag(Layer{Unmask: []string{".corp/key"}}),
			[]string{`flag --unmask: ".corp/key" is not allowed: /etc/stockade/config.json masks ".corp/"; remove the entry`}},
		{"unmask admin glob", user(Layer{Unmask: []string{".env.prod"}}),
			[]string{`/u.json: "unmask": ".env.prod" is not allowed: /etc/stockade/config.json masks ".env.*"`}},
		{"unmask admin protect", flag(Layer{Unmask: []string{"deploy.yml"}}),
			[]string{`flag --unmask: "deploy.yml" is not allowed: /etc/stockade/config.json protects "deploy.yml"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Resolve("/w", admin, tt.layer)
			if tt.want == nil {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q\n  does not contain %q", err, w)
				}
			}
		})
	}

	hooks := Layer{Kind: KindAdmin, Source: "/etc/a.json", Protect: []string{".git/hooks/"}}
	if _, err := Resolve("/w", hooks, flag(Layer{AllowHooks: ptr(true)})); err == nil ||
		!strings.Contains(err.Error(), `/etc/a.json protects ".git/hooks/"`) {
		t.Errorf("allow_hooks over an admin-protected hook dir: %v", err)
	}
	r, err := Resolve("/w", admin)
	if err != nil || r.Policy.Memory != 4<<30 || r.Sources["memory"] != "/etc/stockade/config.json" {
		t.Errorf("admin values apply when nothing overrides them: %+v, %v", r.Sources, err)
	}
}

func TestResolveErrors(t *testing.T) {
	tests := []struct {
		name   string
		layers []Layer
		want   string
	}{
		{"project workdir", []Layer{{Kind: KindProject, Source: "/p/.stockade.json", Workdir: ptr("/x")}},
			`/p/.stockade.json: key "workdir" is not allowed in a project file`},
		{"zero kind", []Layer{{Source: "?"}}, `layer "?" has no valid kind`},
		{"two admins", []Layer{{Kind: KindAdmin, Source: "a"}, {Kind: KindAdmin, Source: "b"}}, "two admin layers"},
	}
	for _, tt := range tests {
		if _, err := Resolve("/w", tt.layers...); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: error = %v, want %q", tt.name, err, tt.want)
		}
	}
}

func TestLoad(t *testing.T) {
	root := t.TempDir()
	cwd := filepath.Join(root, "cwd")
	proj := filepath.Join(root, "proj")
	for _, d := range []string{cwd, proj, filepath.Join(root, "etc", "data")} {
		os.MkdirAll(d, 0o755)
	}
	paths := Paths{
		Admin: writeFile(t, root, "etc/config.json", `{"memory": "4g", "ro": ["data"]}`),
		User:  writeFile(t, root, "user/config.json", `{"pids": 200}`),
	}
	writeFile(t, proj, ProjectFile, `{"cpus": "1.5", "mask": ["private/"]}`)
	writeFile(t, cwd, ProjectFile, `{"cpus": 3}`) // not the workdir: ignored

	r, err := Load(Options{
		Paths:   paths,
		Environ: []string{"STOCKADE_WORKDIR=../proj", "STOCKADE_LOG_LEVEL=debug"},
		Flags:   Flags{Memory: ptr("1g")},
		Cwd:     cwd,
	})
	if err != nil {
		t.Fatal(err)
	}
	p := r.Policy
	if p.Workdir != proj || p.Memory != 1<<30 || p.Pids != 200 || p.CPUs != 1.5 || p.LogLevel != "debug" {
		t.Errorf("Load: %+v", p)
	}
	want := map[string]string{"workdir": "env STOCKADE_WORKDIR", "memory": "flag --memory",
		"pids": paths.User, "cpus": filepath.Join(proj, ProjectFile), "log_level": "env STOCKADE_LOG_LEVEL"}
	for k, w := range want {
		if r.Sources[k] != w {
			t.Errorf("source of %s = %q, want %q", k, r.Sources[k], w)
		}
	}
	if !reflect.DeepEqual(r.ListSources["ro"], []Entry{{filepath.Join(root, "etc", "data"), paths.Admin}}) {
		t.Errorf("ro = %+v: relative to the admin file's directory", r.ListSources["ro"])
	}

	_, err = Load(Options{Paths: paths, Flags: Flags{Memory: ptr("8g")}, Cwd: cwd})
	if err == nil || !strings.Contains(err.Error(), "flag --memory: 8.0 GiB is not allowed: "+paths.Admin) {
		t.Errorf("admin ceiling through Load: %v", err)
	}
	writeFile(t, proj, ProjectFile, `{"workdir": "/"}`)
	_, err = Load(Options{Paths: Paths{}, Flags: Flags{Workdir: ptr(proj)}, Cwd: cwd})
	if err == nil || !strings.Contains(err.Error(), `key "workdir" is not allowed in a project file`) {
		t.Errorf("workdir in the project file: %v", err)
	}
}

func TestDefaultPaths(t *testing.T) {
	tests := []struct {
		env  map[string]string
		user string
	}{
		{map[string]string{"XDG_CONFIG_HOME": "/xdg", "HOME": "/h"}, "/xdg/stockade/config.json"},
		{map[string]string{"XDG_CONFIG_HOME": "rel", "HOME": "/h"}, "/h/.config/stockade/config.json"},
		{map[string]string{"HOME": "/h"}, "/h/.config/stockade/config.json"},
		{map[string]string{}, ""},
	}
	for _, tt := range tests {
		got := DefaultPaths(func(k string) string { return tt.env[k] })
		if got != (Paths{Admin: AdminPath, User: tt.user}) {
			t.Errorf("DefaultPaths(%v) = %+v, want user %q", tt.env, got, tt.user)
		}
	}
}

// TestProjectMayOnlyTighten: the project file comes with the repository, so
// every loosening in it is refused, naming the file, the key and the fix:
// no host variable passed in, no variable off the safe list set, no limit
// raised above the default or above what an earlier layer set.
func TestProjectMayOnlyTighten(t *testing.T) {
	src := "/home/u/p/.stockade.json"
	user := Layer{Kind: KindUser, Source: "/home/u/.config/stockade/config.json",
		Memory: ptr(int64(2 << 30)), CPUs: ptr(2.0), Pids: ptr(int64(500))}
	tests := []struct {
		name    string
		earlier []Layer // layers before the project's
		layer   Layer
		wantErr string // the key and the value shown, or "" for allowed
	}{
		{"allow_hooks", nil, Layer{AllowHooks: ptr(true)}, `"allow_hooks": true`},
		{"unmask", nil, Layer{Unmask: []string{".env"}}, `"unmask": ".env"`},
		{"rw outside", nil, Layer{RW: []string{"/home/u/.bashrc"}}, `"rw": "/home/u/.bashrc"`},
		{"ro outside", nil, Layer{RO: []string{"/home/u/.ssh"}}, `"ro": "/home/u/.ssh"`},
		{"credential env", nil, Layer{Env: []string{"GITHUB_TOKEN"}}, `"env": "GITHUB_TOKEN"`},
		{"shared_home", nil, Layer{SharedHome: ptr(true)}, `"shared_home"`},
		{"gitconfig", nil, Layer{GitConfig: ptr(true)}, `"gitconfig": true is not allowed`},
		// Host variables whose names do not look like credentials.
		{"pass REDIS_URL", nil, Layer{Env: []string{"REDIS_URL"}}, `"env": "REDIS_URL" is not allowed`},
		{"pass MONGODB_URI", nil, Layer{Env: []string{"MONGODB_URI"}}, `"env": "MONGODB_URI"`},
		{"pass SECRET_KEY_BASE", nil, Layer{Env: []string{"SECRET_KEY_BASE"}}, `"env": "SECRET_KEY_BASE"`},
		{"pass TOKEN", nil, Layer{Env: []string{"TOKEN"}}, `"env": "TOKEN"`},
		{"pass PASSWORD", nil, Layer{Env: []string{"PASSWORD"}}, `"env": "PASSWORD"`},
		{"pass a safe name", nil, Layer{Env: []string{"TZ"}}, `"env": "TZ" is not allowed`},
		// Values that change how code loads, or where traffic goes.
		{"set NODE_OPTIONS", nil, Layer{Env: []string{"NODE_OPTIONS=--require=./x.js"}}, `"env": "NODE_OPTIONS" is not allowed`},
		{"set LD_PRELOAD", nil, Layer{Env: []string{"LD_PRELOAD=/w/x.so"}}, `"env": "LD_PRELOAD"`},
		{"set PYTHONPATH", nil, Layer{Env: []string{"PYTHONPATH=."}}, `"env": "PYTHONPATH"`},
		{"set BASH_ENV", nil, Layer{Env: []string{"BASH_ENV=./x"}}, `"env": "BASH_ENV"`},
		{"set GIT_SSH_COMMAND", nil, Layer{Env: []string{"GIT_SSH_COMMAND=./x"}}, `"env": "GIT_SSH_COMMAND"`},
		{"set PATH", nil, Layer{Env: []string{"PATH=./bin:/usr/bin"}}, `"env": "PATH"`},
		{"set https_proxy", nil, Layer{Env: []string{"https_proxy=http://evil.example:3128"}}, `"env": "https_proxy"`},
		{"set NO_PROXY", nil, Layer{Env: []string{"NO_PROXY=*"}}, `"env": "NO_PROXY"`},
		{"set SSL_CERT_FILE", nil, Layer{Env: []string{"SSL_CERT_FILE=./ca.pem"}}, `"env": "SSL_CERT_FILE"`},
		{"set safe values", nil, Layer{Env: []string{"TZ=UTC", "LC_ALL=C.UTF-8", "NO_COLOR=1"}}, ""},
		// Limits: lower only.
		{"pids above the default", nil, Layer{Pids: ptr(int64(90000))}, `"pids": 90000 is not allowed`},
		{"memory above the default", nil, Layer{Memory: ptr(int64(64 << 30))}, `"memory": 64.0 GiB is not allowed`},
		{"memory above the user's", []Layer{user}, Layer{Memory: ptr(int64(3 << 30))}, `"memory": 3.0 GiB is not allowed`},
		{"cpus above the user's", []Layer{user}, Layer{CPUs: ptr(4.0)}, `"cpus": 4 is not allowed`},
		{"pids above the user's", []Layer{user}, Layer{Pids: ptr(int64(1000))}, `"pids": 1000 is not allowed`},
		{"limits lowered", nil, Layer{Pids: ptr(int64(100)), Memory: ptr(int64(1 << 30)), CPUs: ptr(2.0)}, ""},
		{"limits lowered below the user's", []Layer{user}, Layer{Pids: ptr(int64(100)), Memory: ptr(int64(1 << 30)), CPUs: ptr(0.5)}, ""},
		{"limits equal to the default", nil, Layer{Pids: ptr(int64(DefaultPids)), Memory: ptr(int64(DefaultMemory))}, ""},
		{"tightening", nil, Layer{RW: []string{"/home/u/p/build"}, Mask: []string{"secrets/"}}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := tt.layer
			l.Kind, l.Source = KindProject, src
			_, err := Resolve("/home/u/p", append(tt.earlier, l)...)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("tightening project file refused: %v", err)
			case tt.wantErr == "":
			case err == nil:
				t.Errorf("Resolve accepted it, want an error with %s", tt.wantErr)
			case !strings.HasPrefix(err.Error(), src+": ") || !strings.Contains(err.Error(), tt.wantErr) ||
				!strings.Contains(err.Error(), "only tighten") || strings.Contains(err.Error(), "\n"):
				t.Errorf("Resolve = %v\nwant one line naming %s, %s and the rule", err, src, tt.wantErr)
			}
		})
	}
	// An env or flag layer may still raise what the project lowered.
	r, err := Resolve("/home/u/p", Layer{Kind: KindProject, Source: src, Pids: ptr(int64(100))},
		Layer{Kind: KindFlag, Source: "flag", Pids: ptr(int64(90000))})
	if err != nil || r.Policy.Pids != 90000 {
		t.Errorf("flag after a project limit: pids %d, %v", r.Policy.Pids, err)
	}
}

// TestNetworkKeys: egress settings layer like the others, a project file may
// only block or go offline, and the admin's deny mode holds.
func TestNetworkKeys(t *testing.T) {
	user := Layer{Kind: KindUser, Source: "/u.json", AgentAllow: rules(t, "api.example.com"), Resolver: ptr("192.0.2.53")}
	project := Layer{Kind: KindProject, Source: "/p/.stockade.json", AgentBlock: rules(t, "*.evil.example"), Network: ptr("none")}
	flag := Layer{Kind: KindFlag, Source: "flag", AgentAllow: rules(t, "*.github.com:443", "API.example.com.")}
	r, err := Resolve("/p", user, project, flag)
	if err != nil {
		t.Fatal(err)
	}
	p := r.Policy
	if p.Network != "none" || p.AgentPolicy != "deny" || p.Resolver != "192.0.2.53" ||
		!reflect.DeepEqual(p.AgentAllow, rules(t, "api.example.com", "*.github.com:443")) || !reflect.DeepEqual(p.AgentBlock, rules(t, "*.evil.example")) {
		t.Errorf("resolved %+v", p)
	}
	for _, bad := range []Layer{
		{AgentAllow: rules(t, "x.example")}, {AgentPolicy: ptr("allow")}, {Resolver: ptr("192.0.2.1")},
		{Upstream: []string{"anthropic=https://attacker.example"}},
	} {
		bad.Kind, bad.Source = KindProject, "/p/.stockade.json"
		if _, err := Resolve("/p", bad); err == nil || !strings.Contains(err.Error(), "only tighten") {
			t.Errorf("project layer %+v: %v", bad, err)
		}
	}
	admin := Layer{Kind: KindAdmin, Source: "/etc/stockade/config.json", AgentPolicy: ptr("deny")}
	if _, err := Resolve("/p", admin, Layer{Kind: KindFlag, Source: "flag", AgentPolicy: ptr("allow")}); err == nil || !strings.Contains(err.Error(), "agent_policy") {
		t.Errorf("admin deny lifted: %v", err)
	}
	for _, tt := range []struct {
		in string
		ok bool
	}{{"anthropic=https://gw.example", true}, {"anthropic", false}, {"x=ftp://h", false}, {"=https://h", false}} {
		if _, err := parseUpstreamSyntax(tt.in); (err == nil) != tt.ok {
			t.Errorf("parseUpstreamSyntax(%q) = %v", tt.in, err)
		}
	}
	for _, tt := range []struct {
		in string
		ok bool
	}{{"192.0.2.53", true}, {"192.0.2.53:5353", true}, {"[2001:db8::53]:53", true}, {"dns.example", false}, {"192.0.2.53:0", false}} {
		if _, err := parseResolver(tt.in); (err == nil) != tt.ok {
			t.Errorf("parseResolver(%q) = %v", tt.in, err)
		}
	}
}

// TestUndo: how to drop a setting depends on where it came from.
func TestUndo(t *testing.T) {
	r, err := Resolve("/p",
		Layer{Kind: KindUser, Source: "/u/config.json", CPUs: ptr(1.0)},
		Layer{Kind: KindEnv, Source: "env", Pids: ptr(int64(10))},
		Layer{Kind: KindFlag, Source: "flag", Memory: ptr(int64(1 << 30))})
	if err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{
		"memory": "drop --memory", "pids": "unset STOCKADE_PIDS",
		"cpus": `remove "cpus" from /u/config.json`, "log_level": "",
	} {
		if got := r.Undo(key); got != want {
			t.Errorf("Undo(%q) = %q, want %q", key, got, want)
		}
	}
}

func rules(t *testing.T, in ...string) []egress.Rule {
	t.Helper()
	var out []egress.Rule
	for _, s := range in {
		r, err := egress.ParseRule(s)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// TestRuleErrors: a rule is parsed once, when its layer loads, by the
// parser the session uses at run time; every source refuses a bad rule with
// that parser's line after its own prefix, and keeps a good one parsed.
func TestRuleErrors(t *testing.T) {
	dir := t.TempDir()
	for _, in := range []string{"", "a b", "x;y", "bad host!", "*.", "a.*.example", "10.0.0.0/33", "10.0.0.5:0",
		"[example.com]:443", "fe80::1%eth0", "example.com:https", "1.2.3", strings.Repeat("a", 400)} {
		_, perr := egress.ParseRule(in)
		if perr == nil {
			t.Fatalf("ParseRule(%q) accepted it", in)
		}
		want := perr.Error()
		if strings.Contains(want, "\n") || !strings.Contains(want, egress.RuleFix) {
			t.Errorf("ParseRule(%q) = %q, want one line with the fix", in, want)
		}
		_, err := FromFlags(Flags{AgentAllow: []string{in}}, "/")
		checkErr(t, err, "flag --agent-allow: "+want)
		_, err = FromFlags(Flags{AgentBlock: []string{in}}, "/")
		checkErr(t, err, "flag --agent-block: "+want)
		if in != "" && !strings.Contains(in, ",") {
			_, err = FromEnv([]string{"STOCKADE_AGENT_ALLOW=example.com," + in}, "/")
			checkErr(t, err, "env STOCKADE_AGENT_ALLOW: "+want)
		}
		for _, kind := range []Kind{KindUser, KindProject} {
			path := filepath.Join(dir, "c.json")
			data, _ := json.Marshal(map[string][]string{"agent_allow": {in}})
			if err := os.WriteFile(path, data, 0o600); err != nil {
				t.Fatal(err)
			}
			_, err = LoadFile(path, kind)
			checkErr(t, err, path+`: "agent_allow": `+want)
		}
	}
	l, err := FromFlags(Flags{AgentAllow: []string{" Bücher.example:443", "::ffff:10.0.0.0/104"}}, "/")
	if err != nil || !reflect.DeepEqual(l.AgentAllow, rules(t, "xn--bcher-kva.example:443", "10.0.0.0/8")) {
		t.Errorf("FromFlags = %v, %v", l.AgentAllow, err)
	}
}

func checkErr(t *testing.T, err error, want string) {
	t.Helper()
	if err == nil || err.Error() != want {
		t.Errorf("error %v\nwant     %s", err, want)
	}
}
