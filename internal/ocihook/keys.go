package ocihook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"unicode"
)

// checkKeys refuses a config that a case-sensitive runtime could read
// differently from Spec: an object with two keys that encoding/json takes
// for one (the same key twice, or "mounts" and "Mounts" or "mountſ", since
// it matches field names without regard to case and keeps the last), or a
// key that only case-folds to a field Check reads ("MOUNTS", which crun
// ignores). Either would let Check pass a twin the runtime never uses.
func checkKeys(config []byte) error {
	dec := json.NewDecoder(bytes.NewReader(config))
	dec.UseNumber()
	depth := 0
	var walk func(path string) error
	walk = func(path string) error {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		if tok == json.Delim('{') || tok == json.Delim('[') {
			// An OCI config is a dozen levels deep at most; a hostile
			// one must not make the hook recurse for every byte.
			if depth++; depth > maxDepth {
				return fmt.Errorf("%s is nested more than %d deep", orRoot(path), maxDepth)
			}
			defer func() { depth-- }()
		}
		switch tok {
		case json.Delim('{'):
			seen := make(map[string]string)
			for dec.More() {
				tok, err := dec.Token()
				if err != nil {
					return err
				}
				key := tok.(string)
				folded := foldKey(key)
				if prev, ok := seen[folded]; ok {
					return fmt.Errorf("%s holds the key %q twice (as %q and %q); a runtime may read either", orRoot(path), key, prev, key)
				}
				seen[folded] = key
				if name, ok := specKeys()[folded]; ok && name != key {
					return fmt.Errorf("%s has the key %q, which the checks would read as %q and the runtime would not; spell it %q", orRoot(path), key, name, name)
				}
				if err := walk(path + "." + key); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		case json.Delim('['):
			for i := 0; dec.More(); i++ {
				if err := walk(fmt.Sprintf("%s[%d]", path, i)); err != nil {
					return err
				}
			}
			_, err = dec.Token()
			return err
		}
		return nil
	}
	return walk("")
}

// maxDepth is how deeply checkKeys lets a config nest.
const maxDepth = 64

func orRoot(path string) string {
	if path == "" {
		return "the config"
	}
	return strings.TrimPrefix(path, ".")
}

// foldKey folds a key as encoding/json does when it matches a field name:
// each rune to the smallest of its case-folding orbit.
func foldKey(key string) string {
	return strings.Map(func(r rune) rune {
		for {
			r2 := unicode.SimpleFold(r)
			if r2 <= r {
				return r2
			}
			r = r2
		}
	}, key)
}

// specKeys maps the folded form of every field name of Spec (at any depth)
// to its exact spelling. Made at first use: the walk over Spec's types was
// a tenth of a millisecond of every stockade's start, which only the hooks
// need.
var specKeys = sync.OnceValue(func() map[string]string {
	keys := make(map[string]string)
	var add func(t reflect.Type)
	add = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct {
			return
		}
		for i := range t.NumField() {
			f := t.Field(i)
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "" || name == "-" {
				continue
			}
			if _, ok := keys[foldKey(name)]; !ok {
				keys[foldKey(name)] = name
				add(f.Type)
			}
		}
	}
	add(reflect.TypeFor[Spec]())
	return keys
})
