package engine

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/stockade-dev/stockade/internal/ocihook"
)

func TestSubIDs(t *testing.T) {
	const file = "alice:100000:65536\n1002:200000:65536\nshort:300000:1000\nbob:x:65536\n"
	for _, c := range []struct {
		name string
		id   int
		want Range
		ok   bool
	}{
		{"alice", 1001, Range{100000, 65536}, true},
		{"carol", 1002, Range{200000, 65536}, true}, // by uid
		{"short", 1003, Range{}, false},             // too few ids
		{"bob", 1004, Range{}, false},               // not a number
		{"dave", 1005, Range{}, false},
	} {
		got, ok := SubIDs(strings.NewReader(file), c.name, c.id)
		if got != c.want || ok != c.ok {
			t.Errorf("SubIDs(%s, %d) = %v, %v; want %v, %v", c.name, c.id, got, ok, c.want, c.ok)
		}
	}
}

func TestPlan(t *testing.T) {
	sub := Range{100000, 65536}
	for _, c := range []struct {
		own             int
		sandbox, engine string
		wantErr         bool
	}{
		// A user: the sandbox's 0 is a subordinate id, not the user, so
		// the command does not own the engine's namespace; the engine's 0
		// is the user.
		{1001, "0 100000 1\n1001 1001 1\n100001 100001 65535\n", "0 1001 1\n1 100001 65535\n", false},
		// Root: its own 0 in both.
		{0, "0 0 1\n100000 100000 65536\n", "0 0 1\n1 100000 65536\n", false},
		// A range that holds the user's own id cannot be split around it.
		{100005, "", "", true},
	} {
		m, err := Plan(c.own, sub)
		if (err != nil) != c.wantErr {
			t.Fatalf("Plan(%d): %v", c.own, err)
		}
		if err != nil {
			continue
		}
		if got := File(m.Sandbox); got != c.sandbox {
			t.Errorf("Plan(%d) sandbox map:\n%s\nwant:\n%s", c.own, got, c.sandbox)
		}
		if got := File(m.Engine); got != c.engine {
			t.Errorf("Plan(%d) engine map:\n%s\nwant:\n%s", c.own, got, c.engine)
		}
	}
	m, _ := Plan(1001, sub)
	if got := strings.Join(Args(m.Sandbox), " "); got != "0 100000 1 1001 1001 1 100001 100001 65535" {
		t.Errorf("newuidmap arguments: %s", got)
	}
}

func TestFreeStart(t *testing.T) {
	if got := FreeStart("", ""); got != 100000 {
		t.Errorf("FreeStart of nothing = %d", got)
	}
	if got := FreeStart("a:100000:65536\n", "b:200000:65536\nbad\n"); got != 265536 {
		t.Errorf("FreeStart = %d, want 265536", got)
	}
}

func TestMissingNamesTheFix(t *testing.T) {
	err := error(&Missing{What: "podman", Fix: "apt-get install podman"})
	if got := err.Error(); got != "--containers needs podman; fix: apt-get install podman" || strings.Contains(got, "\n") {
		t.Errorf("Missing: %q", got)
	}
}

func TestConfs(t *testing.T) {
	for name, c := range map[string]struct{ conf, want string }{
		"containers.conf": {containersConf(), `cgroups = "disabled"`},
		"engine":          {containersConf(), `cgroup_manager = "cgroupfs"`},
		"events":          {containersConf(), `events_logger = "file"`},
		"runtime":         {containersConf(), `runtime = "crun"`},
		"hooks":           {containersConf(), hooksDir},
		"storage.conf":    {storageConf(), `driver = "vfs"`},
		"graphroot":       {storageConf(), storage},
		"client":          {clientConf(), `cgroups = "disabled"`},
		// The containers' network: slirp4netns through the wrapper, the
		// pods' proxies and stub, not the engine's own proxy variables.
		"netns":       {containersConf(), `netns = "slirp4netns"`},
		"wrapper":     {containersConf(), `network_cmd_path = "` + slirpWrapper + `"`},
		"no loopback": {containersConf(), `"allow_host_loopback=false"`},
		"proxy env":   {containersConf(), `"HTTPS_PROXY=http://169.254.1.1:3128"`},
		"no copy":     {containersConf(), `http_proxy = false`},
		"client copy": {clientConf(), `http_proxy = false`},
		"slirp":       {slirpScript(), `exec /usr/bin/slirp4netns --disable-host-loopback "$@"`},
		"resolv.conf": {resolvConfText(), "nameserver 169.254.1.1\n"},
		"runroot":     {storageConf(), `runroot = "/run/user/0/containers"`},
		"short names": {registriesConf(nil), `unqualified-search-registries = []`},
		"insecure":    {registriesConf([]Registry{{Host: "registry.test:5000", Insecure: true}}), "location = \"registry.test:5000\"\ninsecure = true"},
	} {
		if !strings.Contains(c.conf, c.want) {
			t.Errorf("%s lacks %s:\n%s", name, c.want, c.conf)
		}
	}
}

// TestConfsNoNameServers: the engine's configuration names no name
// server for the containers, which would take the place of a network's
// own (aardvark-dns, which alone knows compose's service names).
func TestConfsNoNameServers(t *testing.T) {
	if c := containersConf(); strings.Contains(c, "dns_servers") || strings.Contains(c, "dns_options") {
		t.Errorf("containers.conf names name servers:\n%s", c)
	}
}

func TestRegistriesConfSecureOnes(t *testing.T) {
	if got := registriesConf([]Registry{{Host: "ghcr.io"}}); strings.Contains(got, "ghcr.io") {
		t.Errorf("a registry on HTTPS is marked:\n%s", got)
	}
}

func TestParseRegistry(t *testing.T) {
	for _, c := range []struct {
		in       string
		want     Registry
		rule     string
		wantFail bool
	}{
		{"ghcr.io", Registry{Host: "ghcr.io"}, "ghcr.io:443", false},
		{"registry.test:5000", Registry{Host: "registry.test:5000"}, "registry.test:5000", false},
		{"http://registry.test:5000", Registry{Host: "registry.test:5000", Insecure: true}, "registry.test:5000", false},
		{"http://registry.test", Registry{Host: "registry.test", Insecure: true}, "registry.test:80", false},
		{"198.51.100.30:5000", Registry{Host: "198.51.100.30:5000"}, "198.51.100.30:5000", false},
		{"", Registry{}, "", true},
		{"https://ghcr.io", Registry{}, "", true},
		{"ghcr.io/org", Registry{}, "", true},
		{"*.example.com", Registry{}, "", true},
		{"10.0.0.0/8", Registry{}, "", true},
		{"user@ghcr.io", Registry{}, "", true},
		{"http://", Registry{}, "", true},
		{"bad_name", Registry{}, "", true},
	} {
		got, err := ParseRegistry(c.in)
		if (err != nil) != c.wantFail {
			t.Errorf("ParseRegistry(%q): %v", c.in, err)
			continue
		}
		if err != nil {
			if !strings.Contains(err.Error(), registryFix) || strings.Contains(err.Error(), "\n") {
				t.Errorf("ParseRegistry(%q): the error does not end with the fix: %v", c.in, err)
			}
			continue
		}
		if got != c.want || got.Rule().String() != c.rule {
			t.Errorf("ParseRegistry(%q) = %+v, rule %s; want %+v, rule %s", c.in, got, got.Rule(), c.want, c.rule)
		}
		if back, _ := ParseRegistry(got.String()); back != got {
			t.Errorf("ParseRegistry(%q).String() = %q reads back as %+v", c.in, got.String(), back)
		}
	}
}

// TestHooks: both hooks run the stockade binary of the engine's root with
// the facts file, at podman's stage names; createRuntime reports to the
// events socket.
func TestHooks(t *testing.T) {
	want := map[string]struct {
		stage string
		args  []string
	}{
		"stockade-precreate.json":     {"precreate", []string{"stockade", "hook", "precreate", "--facts", FactsFile}},
		"stockade-createruntime.json": {"createRuntime", []string{"stockade", "hook", "createruntime", "--facts", FactsFile, "--events", EventsSocket}},
	}
	got := hooks()
	if len(got) != len(want) {
		t.Errorf("hooks: %v", got)
	}
	for name, w := range want {
		var h struct {
			Version string
			Hook    struct {
				Path string
				Args []string
			}
			When   struct{ Always bool }
			Stages []string
		}
		if err := json.Unmarshal([]byte(got[name]), &h); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if h.Version != "1.0.0" || h.Hook.Path != binary || !slices.Equal(h.Hook.Args, w.args) || !h.When.Always || !slices.Equal(h.Stages, []string{w.stage}) {
			t.Errorf("%s: %+v", name, h)
		}
	}
	conf := containersConf()
	for _, c := range ocihook.DefaultCaps {
		if !strings.Contains(conf, `"`+c+`"`) {
			t.Errorf("containers.conf's default capabilities lack %s", c)
		}
	}
	if !strings.Contains(conf, "[engine.runtimes]\ncrun = [\""+runtimePath+"\"]") {
		t.Errorf("containers.conf does not run crun through stockade:\n%s", conf)
	}
}
