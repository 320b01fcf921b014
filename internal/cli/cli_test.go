package cli

import (
	"reflect"
	"strings"
	"testing"

	"github.com/alecthomas/kong"
)

// TestFastRunMatchesKong checks that the runs fastRun takes without kong
// come out exactly as kong parses them, and that it leaves the rest to kong.
func TestFastRunMatchesKong(t *testing.T) {
	for _, args := range [][]string{
		{"stockade", "run", "--", "/bin/true"},
		{"stockade", "run", "--", "make", "test"},
		{"stockade", "run", "--", "ls", "-la", "--help", "-d", "--memory", "4g"},
		{"stockade", "run", "--", "--"},
		{"stockade", "run", "--", "sh", "-c", "echo hi", "--", "x"},
		{"stockade", "run", "--", ""},
	} {
		got, ok := fastRun(args)
		if !ok {
			t.Errorf("fastRun(%q) declined, want it taken", args)
			continue
		}
		g := grammar(args)
		parser, err := kong.New(g, kong.Exit(func(code int) { t.Fatalf("kong exited %d on %q", code, args) }))
		if err != nil {
			t.Fatal(err)
		}
		ctx, err := parser.Parse(args[1:])
		if err != nil {
			t.Fatalf("kong: %q: %v", args, err)
		}
		if ctx.Command() != "run <command>" {
			t.Errorf("kong: %q: command %q", args, ctx.Command())
		}
		want := reflect.ValueOf(g).Elem().Field(0).Interface().(runCmd)
		if !reflect.DeepEqual(*got, want) {
			t.Errorf("fastRun(%q) = %#v, kong parses %#v", args, *got, want)
		}
	}
	for _, args := range [][]string{
		{"stockade"},
		{"stockade", "run"},
		{"stockade", "run", "--"},
		{"stockade", "run", "-d", "--", "x"},
		{"stockade", "run", "--memory", "4g", "--", "x"},
		{"stockade", "run", "x"},
		{"stockade", "run", "--help"},
		{"stockade", "claude", "--", "x"},
		{"stockade", "Run", "--", "x"},
	} {
		if _, ok := fastRun(args); ok {
			t.Errorf("fastRun(%q) taken, want it left to kong", args)
		}
	}
}

func TestNewID(t *testing.T) {
	seen := map[string]bool{}
	for i := 0; i < 8; i++ {
		id, err := newID()
		if err != nil {
			t.Fatal(err)
		}
		if len(id) != 6 || strings.Trim(id, "0123456789abcdef") != "" {
			t.Fatalf("newID() = %q, want 6 hex digits", id)
		}
		seen[id] = true
	}
	if len(seen) < 2 {
		t.Errorf("newID() returned %v only", seen)
	}
}
