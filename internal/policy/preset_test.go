package policy

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/stockade-dev/stockade/internal/egress"
)

// TestPresets: every source that takes rules takes a preset, expands it by
// the one parser, and policy show names the preset each rule came from; an
// unknown preset is refused by each with the parser's line, which lists the
// known ones.
func TestPresets(t *testing.T) {
	npm, _ := egress.LookupPreset("@npm")
	pypi, _ := egress.LookupPreset("@pypi")
	want := append(npm.Rules(), pypi.Rules()...)

	dir := t.TempDir()
	path := filepath.Join(dir, "config.json")
	data, _ := json.Marshal(map[string][]string{"agent_allow": {"@npm", "@pypi"}})
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	file, err := LoadFile(path, KindUser)
	if err != nil {
		t.Fatal(err)
	}
	flags, err := FromFlags(Flags{AgentAllow: []string{"@npm", "@pypi"}}, "/")
	if err != nil {
		t.Fatal(err)
	}
	env, err := FromEnv([]string{"STOCKADE_AGENT_ALLOW=@npm,@pypi"}, "/")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range []Layer{file, flags, env} {
		if !reflect.DeepEqual(l.AgentAllow, want) {
			t.Errorf("%s: agent_allow %v, want %v", l.Source, l.AgentAllow, want)
		}
	}

	// A rule written by hand and again by a preset keeps its first source.
	hand, err := FromFlags(Flags{AgentAllow: []string{"pypi.org:443", "@pypi", "@npm"}}, "/")
	if err != nil {
		t.Fatal(err)
	}
	r, err := Resolve("/", hand)
	if err != nil {
		t.Fatal(err)
	}
	text := strings.Join(strings.Fields(r.Text()), " ")
	for _, line := range []string{
		"registry.npmjs.org:443 (flag --agent-allow, preset @npm)",
		"files.pythonhosted.org:443 (flag --agent-allow, preset @pypi)",
		"pypi.org:443 (flag --agent-allow) ",
	} {
		if !strings.Contains(text, line) {
			t.Errorf("policy show lacks %q:\n%s", line, text)
		}
	}

	// A project file may not open the network, by a preset either; the
	// refusal quotes the preset as written.
	project := filepath.Join(dir, ".stockade.json")
	data, _ = json.Marshal(map[string][]string{"agent_allow": {"@npm"}})
	os.WriteFile(project, data, 0o600)
	pl, err := LoadFile(project, KindProject)
	if err != nil {
		t.Fatal(err)
	}
	_, err = Resolve(dir, pl)
	if err == nil || !strings.Contains(err.Error(), `"agent_allow": "@npm" is not allowed: a project file may only tighten`) {
		t.Errorf("project file with @npm: %v", err)
	}

	const bad = `"@nmp" is not a network rule: no such preset; write one of @crates, @debian, @github, @go, @maven, @npm, @pypi, @rubygems`
	_, err = FromFlags(Flags{AgentAllow: []string{"@nmp"}}, "/")
	checkErr(t, err, "flag --agent-allow: "+bad)
	_, err = FromFlags(Flags{AgentBlock: []string{"@nmp"}}, "/")
	checkErr(t, err, "flag --agent-block: "+bad)
	_, err = FromEnv([]string{"STOCKADE_AGENT_ALLOW=@nmp"}, "/")
	checkErr(t, err, "env STOCKADE_AGENT_ALLOW: "+bad)
	data, _ = json.Marshal(map[string][]string{"agent_allow": {"@nmp"}})
	os.WriteFile(path, data, 0o600)
	_, err = LoadFile(path, KindUser)
	checkErr(t, err, path+`: "agent_allow": `+bad)
}
