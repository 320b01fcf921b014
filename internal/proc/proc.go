// Package proc reads facts about processes from /proc.
package proc

import (
	"os"
	"strconv"
	"strings"
)

// StartTime returns field 22 of /proc/PID/stat (the start time in clock
// ticks since boot), or "" if there is no such process. A PID with the start
// time recorded earlier is the same process: PIDs are reused, start times of
// a reused PID differ.
func StartTime(pid int) string {
	_, start := stat(pid)
	return start
}

// stat returns the state (R, S, Z, ...) and start time of pid, or "" for
// both when it is gone.
func stat(pid int) (state, start string) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", ""
	}
	// The command name (field 2) may contain spaces and parentheses;
	// fields are counted after its last ')'.
	s := string(b)
	if i := strings.LastIndexByte(s, ')'); i >= 0 {
		s = s[i+1:]
	}
	f := strings.Fields(s)
	if len(f) < 20 {
		return "", ""
	}
	return f[0], f[19]
}

// Alive reports whether pid is still the process that had start time
// start, and has not exited (a zombie is not alive).
func Alive(pid int, start string) bool {
	if pid <= 0 || start == "" {
		return false
	}
	// A zombie runs nothing again: its parent may never reap it (an init
	// that does not), and what it left must not wait for that.
	state, now := stat(pid)
	return now == start && state != "Z" && state != "X"
}
