package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// LoadFile reads the JSON config file at path as a layer of the given kind
// (KindAdmin, KindUser or KindProject). A missing file is an empty layer.
// Relative ro, rw and workdir paths are relative to the file's directory;
// ro and rw paths must exist. Errors are one line naming the file, the key
// and the fix.
func LoadFile(path string, kind Kind) (Layer, error) {
	if kind != KindAdmin && kind != KindUser && kind != KindProject {
		return Layer{}, fmt.Errorf("loading %s as a %v layer: only admin, user and project layers are files", path, kind)
	}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return Layer{Kind: kind, Source: path}, nil
	}
	if err != nil {
		return Layer{}, fmt.Errorf("reading config: %w", err)
	}
	return parseFile(data, path, kind)
}

// parseFile walks the top-level object token by token rather than
// unmarshalling it into a struct, so it can report unknown and duplicate
// keys, and wrong types, by name.
func parseFile(data []byte, path string, kind Kind) (Layer, error) {
	l := Layer{Kind: kind, Source: path}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	syntax := func(err error) error { return syntaxError(path, data, err) }

	tok, err := dec.Token()
	if err != nil {
		return Layer{}, syntax(err)
	}
	if tok != json.Delim('{') {
		return Layer{}, fmt.Errorf(`%s: the config must be a JSON object, like {"memory": "2g"}`, path)
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return Layer{}, syntax(err)
		}
		key, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return Layer{}, syntax(err)
		}
		switch {
		case seen[key]:
			return Layer{}, fmt.Errorf("%s: key %q appears twice; keep one", path, key)
		case key == SlurmKey && kind != KindAdmin:
			return Layer{}, fmt.Errorf("%s: key %q may be set only in %s, by the administrator: a user's or a project's file cannot widen the Slurm allowlist; remove it", path, key, AdminPath)
		case key == SlurmKey:
			// The Slurm chaperon reads its allowlist itself (slurm.LoadAdmin).
			seen[key] = true
			continue
		case !slices.Contains(fileKeys, key):
			return Layer{}, unknownKey(path, key)
		case key == "workdir" && kind == KindProject:
			return Layer{}, fmt.Errorf("%s: key \"workdir\" is not allowed in a project file, which lives in the workdir; remove it and use --workdir or STOCKADE_WORKDIR", path)
		}
		seen[key] = true
		if err := l.setRaw(ref{kind: kind, source: path, key: key}, raw, filepath.Dir(path)); err != nil {
			return Layer{}, err
		}
	}
	if _, err := dec.Token(); err != nil {
		return Layer{}, syntax(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Layer{}, syntax(errors.New("unexpected data after the top-level object"))
	}
	return l, nil
}

// setRaw checks the JSON type of one value, then parses it like any other
// source would. base resolves relative paths.
func (l *Layer) setRaw(r ref, raw json.RawMessage, base string) error {
	shown := string(raw)
	if isList(r.key) {
		var entries []string
		if err := json.Unmarshal(raw, &entries); err != nil || raw[0] != '[' {
			return r.errorf(shown, `is not a list of strings; write e.g. ["%s"]`, listExample(r.key))
		}
		for _, e := range entries {
			if err := l.add(r, e, strconv.Quote(e), base); err != nil {
				return err
			}
		}
		return nil
	}
	var text string
	switch c := raw[0]; {
	case r.key == "allow_hooks" || r.key == "shared_home" || r.key == "gitconfig":
		if c != 't' && c != 'f' {
			return r.errorf(shown, "is not a boolean; write true or false")
		}
		text = shown
	case c == '"':
		if err := json.Unmarshal(raw, &text); err != nil {
			return r.errorf(shown, "is not a valid string: %v", err)
		}
	case (c == '-' || c >= '0' && c <= '9') && (r.key == "memory" || r.key == "cpus" || r.key == "pids"):
		text = shown
	default:
		return r.errorf(shown, "has the wrong type; write %s", scalarExample(r.key))
	}
	return l.set(r, text, shown, base)
}

func listExample(key string) string {
	switch key {
	case "ro", "rw":
		return "/srv/data"
	case "env":
		return "GOFLAGS"
	}
	return ".secrets/"
}

func scalarExample(key string) string {
	switch key {
	case "memory":
		return `a string with a unit such as "2g"`
	case "cpus":
		return `a number such as 2 or "1.5"`
	case "pids":
		return "an integer such as 4096"
	case "log_level":
		return `a string: "` + strings.Join(logLevels, `", "`) + `"`
	case "network":
		return `a string: "` + strings.Join(networks, `", "`) + `"`
	case "terminal":
		return `a string: "` + strings.Join(terminals, `", "`) + `"`
	}
	return `a string such as "/home/me/project"`
}

// unknownKey names the closest known key when the unknown one is a typo.
func unknownKey(path, key string) error {
	best, bestDist := "", 3
	for _, k := range fileKeys {
		if d := editDistance(key, k); d < bestDist {
			best, bestDist = k, d
		}
	}
	hint := ""
	if best != "" {
		hint = fmt.Sprintf("did you mean %q? ", best)
	}
	return fmt.Errorf("%s: key %q is unknown; %s(known keys: %s)", path, key, hint, strings.Join(fileKeys, ", "))
}

// editDistance is the Levenshtein distance, for typo hints only.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur := make([]int, len(b)+1)
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev = cur
	}
	return prev[len(b)]
}

// syntaxError reports bad JSON as path:line:column. The Decoder's offsets
// depend on which call failed, so the whole input is re-parsed with
// json.Unmarshal, whose SyntaxError.Offset is always the number of bytes read
// up to and including the bad one.
func syntaxError(path string, data []byte, err error) error {
	offset := int64(len(data))
	var v any
	var se *json.SyntaxError
	if uerr := json.Unmarshal(data, &v); errors.As(uerr, &se) {
		offset, err = se.Offset, se
	}
	line, col := position(data, offset)
	return fmt.Errorf("%s:%d:%d: invalid JSON: %v; fix the syntax", path, line, col, err)
}

// position converts a count of bytes read into the 1-based line and column
// of the last byte read, the one the parser choked on.
func position(data []byte, offset int64) (line, col int) {
	if offset > int64(len(data)) {
		offset = int64(len(data))
	}
	if offset > 0 {
		offset--
	}
	before := data[:offset]
	line = 1 + bytes.Count(before, []byte("\n"))
	col = 1 + len(before) - (bytes.LastIndexByte(before, '\n') + 1)
	return line, col
}
