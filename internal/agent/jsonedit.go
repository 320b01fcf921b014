package agent

import (
	"reflect"
	"slices"
	"strings"

	"github.com/stockade-dev/stockade/internal/sandboxnet"
)

// JSONEdit is one value stockade puts into a JSON settings file of the
// sandbox HOME at every start, keeping every other key of the file: the
// answers to the questions a CLI would otherwise ask before its prompt.
type JSONEdit struct {
	// Keys lead from the top object to the value; "{{workdir}}" stands
	// for the project directory as the agent sees it.
	Keys []string
	// Value is set at Keys, or with Add, added to the list at Keys when
	// the list lacks it.
	Value any
	Add   bool
}

// Workdir is the key that JSONEdits replaces with the project directory.
const Workdir = "{{workdir}}"

// claudeKeyTail is how Claude Code remembers a key the user allowed: its
// last 20 characters, after trimming (customApiKeyResponses in
// ~/.claude.json, Claude Code 2.1.330).
func claudeKeyTail(key string) string {
	key = strings.TrimSpace(key)
	return key[max(0, len(key)-20):]
}

// claudeStart answers Claude Code's two start-up questions for the
// placeholder key and the project: "Do you trust this folder?" (default
// No, exit) and "Detected a custom API key … use this API key?" (default
// No, which leads away from the auth proxy), and marks the onboarding done.
var claudeStart = []JSONEdit{
	{Keys: []string{"hasCompletedOnboarding"}, Value: true},
	{Keys: []string{"projects", Workdir, "hasTrustDialogAccepted"}, Value: true},
	{Keys: []string{"customApiKeyResponses", "approved"}, Value: claudeKeyTail(sandboxnet.DummyKey), Add: true},
}

// JSONEdits returns the profile's edits with {{workdir}} replaced by each
// of workdirs (the project directory and its canonical path, when the two
// differ), file by file.
func (p Profile) JSONEdits(workdirs []string) map[string][]JSONEdit {
	out := map[string][]JSONEdit{}
	for file, edits := range p.HomeJSON {
		for _, e := range edits {
			if !slices.Contains(e.Keys, Workdir) {
				out[file] = append(out[file], e)
				continue
			}
			for _, w := range workdirs {
				keys := slices.Clone(e.Keys)
				for i, k := range keys {
					if k == Workdir {
						keys[i] = w
					}
				}
				out[file] = append(out[file], JSONEdit{Keys: keys, Value: e.Value, Add: e.Add})
			}
		}
	}
	return out
}

// Apply makes the edit in doc, the file's top object, and reports whether
// doc changed. Objects missing on the way are made; a value of another
// kind on the way (a string where an object or a list belongs) is left as
// it is and the edit skipped: it is the user's, and stockade does not
// guess what it meant.
func (e JSONEdit) Apply(doc map[string]any) bool {
	obj := doc
	for _, k := range e.Keys[:len(e.Keys)-1] {
		switch next := obj[k].(type) {
		case map[string]any:
			obj = next
		case nil:
			if _, present := obj[k]; present {
				return false // an explicit null
			}
			made := map[string]any{}
			obj[k] = made
			obj = made
		default:
			return false
		}
	}
	last := e.Keys[len(e.Keys)-1]
	old, present := obj[last]
	if !e.Add {
		if present && reflect.DeepEqual(old, e.Value) {
			return false
		}
		obj[last] = e.Value
		return true
	}
	if !present {
		obj[last] = []any{e.Value}
		return true
	}
	list, ok := old.([]any)
	if !ok || slices.ContainsFunc(list, func(v any) bool { return reflect.DeepEqual(v, e.Value) }) {
		return false
	}
	obj[last] = append(list, e.Value)
	return true
}
