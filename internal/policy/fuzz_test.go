package policy

import "testing"

// FuzzParseFile: no config file, however malformed, panics the parser, and
// whatever it accepts resolves or is refused with an error.
func FuzzParseFile(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"memory": "2g", "cpus": 1.5, "pids": 100}`, `{"ro": ["/usr"], "mask": [".env.*"]}`,
		`{"memroy": 1}`, `{"memory": "lots"}`, `[1,2]`, `{"env": ["A=1", "B"]}`, `{"allow_hooks": "yes"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := parseFile(data, "/p/.stockade.json", KindUser)
		if err != nil {
			return
		}
		Resolve("/p", l)
	})
}

// FuzzParseSize: sizes parse to a positive number or fail; never panic.
func FuzzParseSize(f *testing.F) {
	for _, s := range []string{"1", "2g", "512m", "1.5g", "0", "-1", "9999999999999t", "2GiB"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		n, err := ParseSize(s)
		if err == nil && n < 0 {
			t.Errorf("ParseSize(%q) = %d", s, n)
		}
	})
}
