package job

import (
	"slices"
	"testing"
)

func TestExcludesFileEnv(t *testing.T) {
	got := excludesFileEnv([]string{"A=1", "GIT_CONFIG_COUNT=2", "GIT_CONFIG_KEY_0=x", "B=2"}, "/f")
	want := []string{"A=1", "GIT_CONFIG_KEY_0=x", "B=2", "GIT_CONFIG_COUNT=3", "GIT_CONFIG_KEY_2=core.excludesFile", "GIT_CONFIG_VALUE_2=/f"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
	got = excludesFileEnv([]string{"GIT_CONFIG_COUNT=junk"}, "/f")
	want = []string{"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=core.excludesFile", "GIT_CONFIG_VALUE_0=/f"}
	if !slices.Equal(got, want) {
		t.Errorf("got %q\nwant %q", got, want)
	}
}
