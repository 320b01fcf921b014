package agent

import (
	"encoding/json"
	"testing"
)

// TestJSONEditApply: an edit sets its value or adds it to its list, makes
// the objects missing on the way, and leaves alone a value of another kind
// where an object or a list belongs, and everything else.
func TestJSONEditApply(t *testing.T) {
	set := JSONEdit{Keys: []string{"projects", "/p", "trusted"}, Value: true}
	add := JSONEdit{Keys: []string{"keys", "approved"}, Value: "tail", Add: true}
	for _, tt := range []struct {
		name, doc string
		edit      JSONEdit
		want      string
		changed   bool
	}{
		{"set in an empty object", `{}`, set, `{"projects":{"/p":{"trusted":true}}}`, true},
		{"set keeps the rest", `{"a":1,"projects":{"/q":{"x":[1]},"/p":{"y":"z"}}}`, set,
			`{"a":1,"projects":{"/p":{"trusted":true,"y":"z"},"/q":{"x":[1]}}}`, true},
		{"set replaces false", `{"projects":{"/p":{"trusted":false}}}`, set, `{"projects":{"/p":{"trusted":true}}}`, true},
		{"set already there", `{"projects":{"/p":{"trusted":true}}}`, set, `{"projects":{"/p":{"trusted":true}}}`, false},
		{"a string on the way", `{"projects":"mine"}`, set, `{"projects":"mine"}`, false},
		{"a null on the way", `{"projects":null}`, set, `{"projects":null}`, false},
		{"a list on the way", `{"projects":[]}`, set, `{"projects":[]}`, false},
		{"add to nothing", `{}`, add, `{"keys":{"approved":["tail"]}}`, true},
		{"add keeps the list", `{"keys":{"approved":["a"],"rejected":["b"]}}`, add, `{"keys":{"approved":["a","tail"],"rejected":["b"]}}`, true},
		{"add already there", `{"keys":{"approved":["tail","a"]}}`, add, `{"keys":{"approved":["tail","a"]}}`, false},
		{"add to a string", `{"keys":{"approved":"x"}}`, add, `{"keys":{"approved":"x"}}`, false},
		{"add beside objects", `{"keys":{"approved":[{"k":1},["l"]]}}`, add, `{"keys":{"approved":[{"k":1},["l"],"tail"]}}`, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var doc map[string]any
			if err := json.Unmarshal([]byte(tt.doc), &doc); err != nil {
				t.Fatal(err)
			}
			changed := tt.edit.Apply(doc)
			got, _ := json.Marshal(doc)
			if string(got) != tt.want || changed != tt.changed {
				t.Errorf("Apply(%s) = %s, changed %v; want %s, %v", tt.doc, got, changed, tt.want, tt.changed)
			}
		})
	}
}

// TestClaudeStart: Claude Code's answers name the project as the agent
// sees it, each form of it, and the placeholder key as Claude Code keeps
// it (its last 20 characters).
func TestClaudeStart(t *testing.T) {
	edits := Profiles["claude"].JSONEdits([]string{"/home/u/proj", "/data/proj"})[".claude.json"]
	doc := map[string]any{}
	for _, e := range edits {
		e.Apply(doc)
	}
	got, _ := json.Marshal(doc)
	want := `{"customApiKeyResponses":{"approved":["sk-proxy"]},"hasCompletedOnboarding":true,` +
		`"projects":{"/data/proj":{"hasTrustDialogAccepted":true},"/home/u/proj":{"hasTrustDialogAccepted":true}}}`
	if string(got) != want {
		t.Errorf("claude's start-up answers:\n got %s\nwant %s", got, want)
	}
	if tail := claudeKeyTail(" sk-ant-api03-0123456789abcdefghijKLMN\n"); tail != "456789abcdefghijKLMN" {
		t.Errorf("claudeKeyTail = %q", tail)
	}
}
