package session

import (
	"testing"
	"time"
)

// TestGone: a group is the leftover of a run that is over only when the
// run's record says so and started when the group was made; a record of an
// earlier run with the same id (ids are short) says nothing of a run that
// is starting now, and no record says nothing at all.
func TestGone(t *testing.T) {
	st := Store{Root: t.TempDir()}
	started := time.Now().Add(-2 * time.Hour).UTC()
	ended := started.Add(time.Minute)
	code := 0
	if err := st.Create(Session{ID: "abc123", State: Exited, Started: started, Ended: &ended, ExitCode: &code, Foreground: true}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		id   string
		made time.Time
		want bool
	}{
		{"abc123", started.Add(-time.Millisecond), true},
		{"abc123", started.Add(2 * time.Second), true},
		{"abc123", time.Now(), false}, // another run, same id
		{"def456", started, false},    // no record
		{"..", started, false},
		{"", started, false},
	} {
		if got := st.Gone(tt.id, tt.made); got != tt.want {
			t.Errorf("Gone(%q, started%+v) = %v, want %v", tt.id, tt.made.Sub(started), got, tt.want)
		}
	}
}
