package cli

import (
	"strings"
	"testing"

	"github.com/stockade-dev/stockade/internal/policy"
)

// TestContainerStorage: the project's storage by default, the session's
// with --require-digest unless project is asked for, which is a loosening.
func TestContainerStorage(t *testing.T) {
	project, session := "project", "session"
	for _, tc := range []struct {
		name     string
		f        containerFlags
		store    bool
		loosened string
	}{
		{"default", containerFlags{Containers: true}, true, ""},
		{"session", containerFlags{Containers: true, ContainersStorage: &session}, false, ""},
		{"require-digest", containerFlags{Containers: true, RequireDigest: true}, false, ""},
		{"require-digest, session", containerFlags{Containers: true, RequireDigest: true, ContainersStorage: &session}, false, ""},
		{"require-digest, project", containerFlags{Containers: true, RequireDigest: true, ContainersStorage: &project}, true, "containers_storage project with require_digest"},
	} {
		es, err := tc.f.parse(policy.Policy{Network: "proxy"})
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if es.store != tc.store {
			t.Errorf("%s: project storage %v, want %v", tc.name, es.store, tc.store)
		}
		got := strings.Join(es.loosened, "; ")
		if (tc.loosened == "") != (got == "") || !strings.Contains(got, tc.loosened) {
			t.Errorf("%s: loosened %q, want %q", tc.name, got, tc.loosened)
		}
	}
}
