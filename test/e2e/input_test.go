package e2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// TestBadInput: every malformed input is one clear line naming the input and
// the fix, a non-zero exit, and nothing half-done.
func TestBadInput(t *testing.T) {
	tests := []struct {
		name     string
		files    map[string]string // relative to the workdir, or absolute under HOME via "~/"
		env      []string
		args     []string
		wantCode int
		want     []string // substrings of the single error line
	}{
		{"unknown flag", nil, nil, []string{"run", "--memroy", "1g", "--", "true"}, 2, []string{"--memroy"}},
		{"no command", nil, nil, []string{"run"}, 2, []string{"no command given"}},
		{"only the separator", nil, nil, []string{"run", "--"}, 2, []string{"no command given"}},
		{"bad memory", nil, nil, []string{"run", "--memory", "lots", "--", "true"}, 2, []string{"--memory", `"lots"`, "2g"}},
		{"zero pids", nil, nil, []string{"run", "--pids", "0", "--", "true"}, 2, []string{"--pids", "greater than 0"}},
		{"negative cpus", nil, nil, []string{"run", "--cpus=-1", "--", "true"}, 2, []string{"--cpus"}},
		{"bad log level", nil, nil, []string{"run", "--log-level", "loud", "--", "true"}, 2, []string{"--log-level", "loud"}},
		{"missing ro path", nil, nil, []string{"run", "--ro", "/nonexistent/stockade-xyz", "--", "true"}, 2, []string{"/nonexistent/stockade-xyz"}},
		{"workdir is home", nil, []string{"STOCKADE_WORKDIR=HOME"}, []string{"run", "--", "true"}, 125, []string{"workdir"}},
		{"unknown key in project file", map[string]string{".stockade.json": `{"memroy": "1g"}`}, nil, []string{"run", "--", "true"}, 125, []string{".stockade.json", `"memroy"`, `"memory"`}},
		{"bad json in user file", map[string]string{"~/.config/stockade/config.json": "{\n  \"memory\": \n}"}, nil, []string{"run", "--", "true"}, 125, []string{"config.json:3:1", "fix the syntax"}},
		{"wrong type", map[string]string{".stockade.json": `{"pids": "many"}`}, nil, []string{"run", "--", "true"}, 125, []string{".stockade.json", `"pids"`}},
		{"project file may not loosen", map[string]string{".stockade.json": `{"allow_hooks": true}`}, nil, []string{"run", "--", "true"}, 125, []string{".stockade.json", "allow_hooks", "only tighten"}},
		{"project rw outside", map[string]string{".stockade.json": `{"rw": ["~/.bashrc"]}`}, nil, []string{"run", "--", "true"}, 125, []string{".stockade.json", "rw"}},
		{"bad env var", nil, []string{"STOCKADE_MEMORY=huge"}, []string{"run", "--", "true"}, 125, []string{"STOCKADE_MEMORY", "huge"}},
		// A size without a unit is refused, not taken as bytes (issue 14).
		{"memory without a unit in a file", map[string]string{"~/.config/stockade/config.json": `{"memory": 4}`}, nil, []string{"run", "--", "true"}, 125, []string{"config.json", `"memory": 4 is a size without a unit`, `"4g"`}},
		{"memory without a unit in a flag", nil, nil, []string{"run", "--memory", "4", "--", "true"}, 2, []string{`flag --memory: "4" is a size without a unit`, `"4g"`}},
		// The project file is the repository's: no host variable passed in,
		// only inert ones set, no limit raised (issue 9 §6).
		{"project passes a host variable", map[string]string{".stockade.json": `{"env": ["REDIS_URL"]}`}, []string{"REDIS_URL=redis://:pw@db"}, []string{"run", "--", "true"}, 125, []string{".stockade.json", `"env": "REDIS_URL"`, "NAME=VALUE"}},
		{"project sets NODE_OPTIONS", map[string]string{".stockade.json": `{"env": ["NODE_OPTIONS=--require=./x.js"]}`}, nil, []string{"run", "--", "true"}, 125, []string{".stockade.json", `"env": "NODE_OPTIONS"`, "TZ, LANG"}},
		{"project sets LD_PRELOAD", map[string]string{".stockade.json": `{"env": ["LD_PRELOAD=./x.so"]}`}, nil, []string{"run", "--", "true"}, 125, []string{".stockade.json", `"env": "LD_PRELOAD"`}},
		{"project raises pids", map[string]string{".stockade.json": `{"pids": 90000}`}, nil, []string{"run", "--", "true"}, 125, []string{".stockade.json", `"pids": 90000`, "above 4096, the default"}},
		{"project raises memory", map[string]string{".stockade.json": `{"memory": "64g"}`}, nil, []string{"run", "--", "true"}, 125, []string{".stockade.json", `"memory": 64.0 GiB`, "above 8.0 GiB"}},
		{"project raises the user's cpus", map[string]string{".stockade.json": `{"cpus": 4}`, "~/.config/stockade/config.json": `{"cpus": 2}`}, nil, []string{"run", "--", "true"}, 125, []string{".stockade.json", `"cpus": 4`, "above 2, set by /", ".config/stockade/config.json)"}},
		{"policy show reports too", nil, nil, []string{"policy", "show", "--memory", "lots"}, 2, []string{"--memory", `"lots"`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			for p, c := range tt.files {
				c = strings.ReplaceAll(c, "~", e.home)
				if strings.HasPrefix(p, "~/") {
					p = filepath.Join(e.home, p[2:])
				}
				e.write(p, c)
			}
			var env []string
			for _, v := range tt.env {
				env = append(env, strings.ReplaceAll(v, "HOME", e.home))
			}
			before := snapshot(t, e.home)
			r := e.run("", env, tt.args...)
			if r.code != tt.wantCode {
				t.Errorf("exit status %d, want %d\nstderr: %s", r.code, tt.wantCode, r.stderr)
			}
			lines := stderrLines(r.stderr)
			if len(lines) != 1 {
				t.Errorf("want one error line, got %d:\n%s", len(lines), r.stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
				}
			}
			if r.stdout != "" {
				t.Errorf("stdout not empty: %q", r.stdout)
			}
			if after := snapshot(t, e.home); after != before {
				t.Errorf("bad input left something behind:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}
}

// TestExplicitLimits: a limit set on purpose, from any source, is enforced
// or refuses the start in one line naming the source and both fixes (issue
// 9 §10); a default that cannot be enforced only warns. Whether this user
// can have the limit is what policy show reports for the same inputs.
func TestExplicitLimits(t *testing.T) {
	requireSandbox(t)
	tests := []struct {
		name  string
		files map[string]string
		env   []string
		flags []string
		limit string
		want  []string // in the refusal: the source and how to drop it
	}{
		{"flag", nil, nil, []string{"--cpus", "1"}, "cpus", []string{"flag --cpus:", "or drop --cpus"}},
		{"env", nil, []string{"STOCKADE_MEMORY=1g"}, nil, "memory", []string{"env STOCKADE_MEMORY:", "or unset STOCKADE_MEMORY"}},
		{"user config", map[string]string{"~/.config/stockade/config.json": `{"memory": "2g"}`}, nil, nil, "memory",
			[]string{"config.json:", `or remove "memory" from ~/.config/stockade/config.json`}},
		{"project config", map[string]string{".stockade.json": `{"cpus": 0.5}`}, nil, nil, "cpus",
			[]string{".stockade.json:", `or remove "cpus" from`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			for p, c := range tt.files {
				if strings.HasPrefix(p, "~/") {
					p = filepath.Join(e.home, p[2:])
				}
				e.write(p, c)
			}
			show := e.run("", tt.env, append([]string{"policy", "show"}, tt.flags...)...)
			refuses := strings.Contains(show.stdout, tt.limit+" limit NOT enforced, so run refuses to start")
			before := snapshot(t, e.home)
			r := e.run("", tt.env, append(append([]string{"run"}, tt.flags...), "--", "echo", "ran")...)
			if !refuses {
				_, inForce, _ := strings.Cut(r.stderr, "; limits ")
				inForce, _, _ = strings.Cut(inForce, "\n")
				if r.code != 0 || r.stdout != "ran\n" || !strings.Contains(inForce, tt.limit+" ") {
					t.Errorf("enforceable %s: exit %d, stdout %q; want it run and the limit on the start line\n%s", tt.limit, r.code, r.stdout, r.stderr)
				}
				return
			}
			lines := stderrLines(r.stderr)
			if r.code != 125 || r.stdout != "" || len(lines) != 1 {
				t.Fatalf("unenforceable %s: exit %d, stdout %q; want 125 and one line\n%s", tt.limit, r.code, r.stdout, r.stderr)
			}
			for _, w := range tt.want {
				if w = strings.ReplaceAll(w, "~", e.home); !strings.Contains(lines[0], w) {
					t.Errorf("the refusal lacks %q: %s", w, lines[0])
				}
			}
			if after := snapshot(t, e.home); after != before {
				t.Errorf("a refused start left something behind:\nbefore:\n%s\nafter:\n%s", before, after)
			}
		})
	}
	// The default memory limit is not set on purpose: it may only warn.
	e := newEnv(t)
	if r := e.run("", nil, "run", "--", "echo", "ran"); r.code != 0 || r.stdout != "ran\n" {
		t.Errorf("default limits: exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
	}
}

// snapshot lists every path under dir, so a test can see that nothing was
// created (no sandbox HOME, placeholder or state file).
func snapshot(t *testing.T, dir string) string {
	t.Helper()
	var b strings.Builder
	filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err == nil {
			b.WriteString(p + "\n")
		}
		return nil
	})
	return b.String()
}

// TestAgentBadInput: an agent that is not installed, a malformed
// .stockaderc, a bad --upstream and a missing key are each one clear line
// and exit 125, before anything starts.
func TestAgentBadInput(t *testing.T) {
	tests := []struct {
		name  string
		rc    string // the project's .stockaderc
		env   []string
		args  []string
		fake  bool // a stand-in claude on PATH
		wants []string
	}{
		{"not installed", "", nil, []string{"claude", "--", "-p", "hi"}, false, []string{"claude is not installed", "npm install -g @anthropic-ai/claude-code"}},
		{"malformed rc file", "# keys\nANTHROPIC_API_KEY sk-ant-x\n", nil, []string{"claude", "--", "-p", "hi"}, true, []string{".stockaderc:2"}},
		{"bad upstream", "", []string{"ANTHROPIC_API_KEY=sk-ant-0123456789"}, []string{"claude", "--upstream", "nowhere=https://x.example", "--", "-p", "hi"}, true, []string{"upstream nowhere=https://x.example"}},
		{"no key", "", nil, []string{"claude", "--", "-p", "hi"}, true, []string{"no API key for claude: set ANTHROPIC_API_KEY or CLAUDE_CODE_OAUTH_TOKEN in the environment", ".config/stockade/stockaderc or ", "proj/.stockaderc (KEY=VALUE lines)", "--env-file"}},
		{"no key for codex", "", nil, []string{"codex", "--", "exec", "hi"}, true, []string{"no API key for codex: set OPENAI_API_KEY in the environment"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			env := append([]string{}, tt.env...)
			if tt.fake {
				bin := filepath.Join(e.home, "bin")
				os.MkdirAll(bin, 0o755)
				os.WriteFile(filepath.Join(bin, tt.args[0]), []byte("#!/bin/sh\necho should not run\n"), 0o755)
				env = append(env, "PATH="+bin+":/usr/bin:/bin")
			}
			if tt.rc != "" {
				e.write(".stockaderc", tt.rc)
			}
			before := snapshot(t, e.workdir)
			r := e.run("", env, tt.args...)
			if r.code != 125 || strings.Contains(r.stdout, "should not run") {
				t.Errorf("exit %d, stdout %q; want 125 and nothing run\n%s", r.code, r.stdout, r.stderr)
			}
			for _, w := range tt.wants {
				if !strings.Contains(r.stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, r.stderr)
				}
			}
			if strings.Contains(r.stderr, "sk-ant-x") {
				t.Error("the error shows a value from the rc file")
			}
			if after := snapshot(t, e.workdir); after != before {
				t.Errorf("bad input left something in the project:\n%s", after)
			}
		})
	}
}

// TestBadRules: a network rule is parsed once, when the policy loads, so
// that policy show and run refuse the same bad rule with the same line,
// from a flag, a variable, the user's config or the project file, before
// anything is made; a running session refuses it with that line too
// (issue 11 §2: policy show used to accept rules run then refused).
func TestBadRules(t *testing.T) {
	rules := []string{"bad host!", "x;y", "10.0.0.0/33", "*.", "a.*.example", "10.0.0.5:0",
		"example.com:https", "[example.com]:443", "fe80::1%eth0", "1.2.3", "under_score.example"}
	sources := []struct {
		name   string
		file   string // relative to the workdir, or under HOME via "~/"; "" for none
		key    string
		env    string
		flag   string
		prefix string // of the error line, before the rule; "~" is HOME
	}{
		{name: "flag", flag: "--agent-allow", prefix: "flag --agent-allow: "},
		{name: "flag block", flag: "--agent-block", prefix: "flag --agent-block: "},
		{name: "env", env: "STOCKADE_AGENT_ALLOW", prefix: "env STOCKADE_AGENT_ALLOW: "},
		{name: "user file", file: "~/.config/stockade/config.json", key: "agent_allow", prefix: `~/.config/stockade/config.json: "agent_allow": `},
		{name: "project file", file: ".stockade.json", key: "agent_block", prefix: `WORKDIR/.stockade.json: "agent_block": `},
	}
	var lines []string // the part after the source, one per rule
	for _, rule := range rules {
		for _, src := range sources {
			t.Run(src.name+" "+rule, func(t *testing.T) {
				e := newEnv(t)
				var env, flags []string
				switch {
				case src.flag != "":
					flags = []string{src.flag + "=" + rule}
				case src.env != "":
					env = []string{src.env + "=" + rule}
				default:
					p := src.file
					if strings.HasPrefix(p, "~/") {
						p = filepath.Join(e.home, p[2:])
					}
					data, _ := json.Marshal(map[string][]string{src.key: {rule}})
					e.write(p, string(data))
				}
				prefix := strings.NewReplacer("~", e.home, "WORKDIR", e.workdir).Replace(src.prefix)
				// A flag's bad value is a usage error (2); a bad file or
				// variable is not the command line's fault.
				showCode, runCode := 1, 125
				if src.flag != "" {
					showCode, runCode = 2, 2
				}
				before := snapshot(t, e.home)
				show := e.run("", env, append([]string{"policy", "show"}, flags...)...)
				run := e.run("", env, append(append([]string{"run"}, flags...), "--", "echo", "ran")...)
				for _, r := range []struct {
					cmd  string
					res  result
					code int
				}{{"policy show", show, showCode}, {"run", run, runCode}} {
					l := stderrLines(r.res.stderr)
					if r.res.code != r.code || r.res.stdout != "" || len(l) != 1 {
						t.Fatalf("%s: exit %d, stdout %q; want %d and one line\n%s", r.cmd, r.res.code, r.res.stdout, r.code, r.res.stderr)
					}
					want := "stockade: " + prefix + strconv.Quote(rule) + " is not a network rule: "
					if !strings.HasPrefix(l[0], want) || !strings.HasSuffix(l[0], `write a name, *.suffix, an IP or a CIDR, with an optional :port (e.g. "api.example.com:443")`) {
						t.Errorf("%s: %s\nwant %s…; write …", r.cmd, l[0], want)
					}
				}
				if show.stderr != run.stderr {
					t.Errorf("policy show and run refuse it differently:\n%s%s", show.stderr, run.stderr)
				}
				if after := snapshot(t, e.home); after != before {
					t.Errorf("a refused rule left something behind:\nbefore:\n%s\nafter:\n%s", before, after)
				}
				if src.name == "flag" {
					lines = append(lines, strings.TrimPrefix(strings.TrimSpace(show.stderr), "stockade: "+prefix))
				}
			})
		}
	}
	// At run time, `network agent allow` goes through the same parser.
	requireSandbox(t)
	e := newEnv(t)
	id := e.startSession("sleep", "1000")
	defer e.run("", nil, "stop", "-s", id)
	for i, rule := range rules {
		if i >= len(lines) {
			break
		}
		r := e.run("", nil, "network", "agent", "allow", "-s", id, rule)
		want := "stockade: session " + id + ": " + lines[i] + "\n"
		if r.code != 1 || r.stderr != want {
			t.Errorf("network agent allow %q: exit %d\n%s\nwant exit 1 and\n%s", rule, r.code, r.stderr, want)
		}
	}
}

// TestPolicyShowEscapes: a project's .stockade.json comes with the
// repository, and so do the names of its directories: policy show writes
// out the control characters in what it lists (an OSC 52 in a --ro path
// set the user's clipboard; cursor movement rubbed out the line above).
func TestPolicyShowEscapes(t *testing.T) {
	e := newEnv(t)
	dir := filepath.Join(e.workdir, "x\x1b]52;c;SGVsbG8=\x07\u202e")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	e.write(".stockade.json", `{"ro": ["x\u001b]52;c;SGVsbG8=\u0007\u202e"]}`)
	r := e.run("", nil, "policy", "show")
	if r.code != 0 {
		t.Fatalf("policy show: exit %d\n%s", r.code, r.stderr)
	}
	if strings.ContainsAny(r.stdout, "\x1b\x07\u202e") {
		t.Errorf("policy show printed the control characters raw:\n%q", r.stdout)
	}
	if !strings.Contains(r.stdout, `x\x1b]52;c;SGVsbG8=\x07\u202e`) {
		t.Errorf("policy show does not list the path written out:\n%s", r.stdout)
	}
	// --json: the same value for a program; for a terminal, the bidi
	// override (which encoding/json leaves raw) is an escape too.
	r = e.run("", nil, "policy", "show", "--json")
	if r.code != 0 {
		t.Fatalf("policy show --json: exit %d\n%s", r.code, r.stderr)
	}
	if strings.ContainsAny(r.stdout, "\x1b\x07\u202e") {
		t.Errorf("policy show --json printed the control characters raw:\n%q", r.stdout)
	}
	var shown struct {
		Policy struct{ RO []string } `json:"policy"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &shown); err != nil || !slices.ContainsFunc(shown.Policy.RO, func(p string) bool { return strings.HasSuffix(p, "x\x1b]52;c;SGVsbG8=\x07\u202e") }) {
		t.Errorf("policy show --json: %v; ro %q, want the path as it is", err, shown.Policy.RO)
	}
}
