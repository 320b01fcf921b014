package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// cprLine is the answer to CSI 6n as the script prints it.
var cprLine = regexp.MustCompile(`cpr=[0-9]+;[0-9]+R`)

// clipText is what the command tries to put on the user's clipboard
// (c3RvY2thZGUtY2xpcA== in the OSC 52).
const clipText = "stockade-clip"

// TestTermFilter: the sandboxed command prints an OSC 52 (set the
// clipboard), a title and a cursor position query, on a tmux pane whose
// set-clipboard is on: tmux turns an OSC 52 that reaches it into a paste
// buffer. By default the clipboard sequence never reaches tmux, while the
// title and the query's answer (which TUIs need) still work; with
// --terminal raw the buffer appears. Both the session relay (a terminal on
// stdin and stdout) and the foreground relay (stdin a pipe) are covered.
func TestTermFilter(t *testing.T) {
	requireSandbox(t)
	for _, tt := range []struct {
		name     string
		flags    string
		piped    bool // stdin a pipe: the foreground relay instead of a session
		wantClip bool
	}{
		// Short names: the session's socket path lives below t.TempDir().
		{"tty", "", false, false},
		{"tty-raw", "--terminal raw", false, true},
		{"pipe", "", true, false},
		{"pipe-raw", "--terminal raw", true, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.write("t.sh", `printf '\033]2;%s\007' TITLE-FROM-SANDBOX
printf '\033]52;c;%s\007' c3RvY2thZGUtY2xpcA==
if [ -t 0 ]; then
	printf '\033[6n'; IFS= read -rs -n 20 -d R reply; echo "cpr=${reply#*[}R"
fi
echo done`)
			run := bin + " run --log-level error " + tt.flags + " -- bash t.sh"
			if tt.piped {
				run = "echo | " + run
			}
			// The pane waits for a line, so that set-clipboard is on
			// before the command prints.
			m := newTmux(t, e, 100, 30, `sh -c 'read go; `+run+`'`)
			m.run("set-option", "-g", "set-clipboard", "on")
			m.run("send-keys", "go", "Enter")
			screen := m.waitScreen("exit=")
			if !strings.Contains(screen, "done") || !strings.Contains(screen, "exit=0") {
				t.Fatalf("the command did not finish:\n%s", screen)
			}
			buffers := m.run("list-buffers", "-F", "#{buffer_sample}")
			if got := strings.Contains(buffers, clipText); got != tt.wantClip {
				t.Errorf("tmux paste buffers %q: clipboard set = %v, want %v", buffers, got, tt.wantClip)
			}
			if title := strings.TrimSpace(m.run("display-message", "-p", "#{pane_title}")); title != "TITLE-FROM-SANDBOX" {
				t.Errorf("pane title %q: the title did not pass", title)
			}
			if !tt.piped && !cprLine.MatchString(screen) {
				t.Errorf("the cursor position query was not answered:\n%s", screen)
			}
			if !tt.piped {
				logs, _ := filepath.Glob(filepath.Join(e.home, ".local/state/stockade/audit/*.jsonl"))
				var all []byte
				for _, l := range logs {
					b, _ := os.ReadFile(l)
					all = append(all, b...)
				}
				if logged := strings.Contains(string(all), "dropped clipboard access (OSC 52)"); logged == tt.wantClip {
					t.Errorf("the audit log records the dropped OSC 52: %v, want %v\n%s", logged, !tt.wantClip, all)
				}
			}
		})
	}
}

// TestReplayFilter: the 64 KiB replay on attach is filtered too. A session
// prints an OSC 52 before anyone attaches; a first client (tmux's default
// set-clipboard, which ignores OSC 52) sees the output and detaches, so the
// output is in the scrollback; a second client, on a pane with
// set-clipboard on, gets it only as the replay.
func TestReplayFilter(t *testing.T) {
	requireSandbox(t)
	for _, tt := range []struct {
		name     string
		flags    []string
		wantClip bool
	}{{"f", nil, false}, {"raw", []string{"--terminal", "raw"}, true}} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			args := append([]string{"run", "-d", "--log-level", "error"}, tt.flags...)
			r := e.run("", nil, append(args, "--", "bash", "-c",
				`printf '\033]52;c;%s\007' c3RvY2thZGUtY2xpcA==; echo printed; exec sleep 1000`)...)
			id := strings.TrimSpace(r.stdout)
			if r.code != 0 || len(id) != 6 {
				t.Fatalf("run -d: exit %d, stdout %q\n%s", r.code, r.stdout, r.stderr)
			}
			defer e.run("", nil, "stop", "-s", id)
			first := newTmux(t, e, 100, 30, bin+" attach -s "+id)
			first.waitScreen("printed")
			first.run("send-keys", "C-]")
			first.waitScreen("exit=0")
			second := newTmux(t, e, 100, 30, `sh -c 'read go; exec `+bin+` attach -s `+id+`'`)
			second.run("set-option", "-g", "set-clipboard", "on")
			second.run("send-keys", "go", "Enter")
			second.waitScreen("printed")
			buffers := second.run("list-buffers", "-F", "#{buffer_sample}")
			if got := strings.Contains(buffers, clipText); got != tt.wantClip {
				t.Errorf("tmux paste buffers %q after the replay: clipboard set = %v, want %v", buffers, got, tt.wantClip)
			}
		})
	}
}

// TestDetachClean: a session's command sets up its terminal the
// way full-screen agents do (the alternate screen, the cursor hidden,
// mouse, focus and paste reporting, a scroll region, reverse video) or
// draws inline with a status line below its cursor; the user detaches.
// The tmux pane is back as it was: the main screen with what was there
// before, the cursor shown, no mouse mode, the full scroll region, a paste
// that arrives unwrapped; the detach message is on a line of its own, in
// plain attributes, right below the last line drawn (the status line,
// intact).
func TestDetachClean(t *testing.T) {
	requireSandbox(t)
	for _, tt := range []struct {
		name, setup string // short names: the session's socket path lives below t.TempDir()
		ready       string
		gone, kept  string // on the screen after the detach: not, and still
	}{
		{"fs", `printf 'BEFORE-ALT\n\033[?1049h\033[?25l\033[?1000h\033[?1002h\033[?1006h\033[?1004h\033[?2004h\033[5;20r\033[7m\033[HFULLSCREEN-READY'`,
			"FULLSCREEN-READY", "FULLSCREEN-READY", "BEFORE-ALT"},
		{"in", `printf '\033[?2004h\033[?25l\033[7mINLINE-PROMPT\r\nSTATUS-LINE\033[1A\033[3G'`,
			"STATUS-LINE", "", "STATUS-LINE"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			e.stopSessions()
			e.write("t.sh", tt.setup+"\nexec sleep 1000\n")
			m := newTmux(t, e, 100, 30, `sh -c '`+bin+` run --log-level error -- bash t.sh; echo DETACHED-EXIT=$?; exec cat -v'`)
			m.waitScreen(tt.ready)
			const flags = "#{alternate_on} #{cursor_flag} #{mouse_any_flag} #{mouse_sgr_flag} #{scroll_region_upper} #{scroll_region_lower}"
			before := strings.TrimSpace(m.run("display-message", "-p", flags))
			if tt.name == "fs" && before != "1 0 1 1 4 19" {
				t.Fatalf("the command's modes did not reach the pane: %s", before)
			}
			m.run("send-keys", "C-]")
			screen := m.waitScreen("DETACHED-EXIT=0")
			if after := strings.TrimSpace(m.run("display-message", "-p", flags)); after != "0 1 0 0 0 29" {
				t.Errorf("after the detach the pane is %q (alternate screen, cursor, mouse, SGR mouse, scroll region), want \"0 1 0 0 0 29\"\n%s", after, screen)
			}
			if tt.gone != "" && strings.Contains(screen, tt.gone) || !strings.Contains(screen, tt.kept) {
				t.Errorf("after the detach the screen does not show %q without %q:\n%s", tt.kept, tt.gone, screen)
			}
			if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(tt.kept) + `\s*\nstockade: detached from session`).MatchString(screen) {
				t.Errorf("the line %q was written over, or the message is not right below it:\n%s", tt.kept, screen)
			}
			// The message starts its own line, in the terminal's plain
			// attributes (capture-pane -e shows them as SGR: only resets
			// may come before it).
			styled := m.run("capture-pane", "-p", "-e")
			if !regexp.MustCompile(`(?m)^(\x1b\[(0|39|49)?m)*stockade: detached from session \w+; re-attach with: stockade attach -s \w+\s*$`).MatchString(styled) {
				t.Errorf("the detach message is not a plain line of its own:\n%q", styled)
			}
			// Bracketed paste is off: the paste reaches cat unwrapped.
			m.run("set-buffer", "PASTED-TEXT")
			m.run("paste-buffer", "-p")
			screen = m.waitScreen("PASTED-TEXT")
			if strings.Contains(screen, "[200~") {
				t.Errorf("the paste arrived wrapped in bracketed-paste marks:\n%s", screen)
			}
		})
	}
}

// TestSessionEndReport: a run on a terminal is a session the CLI attaches
// to; what the checks after it found (a workflow the command created) was
// only in the audit log. It is shown once the session has ended, on the
// main screen, after the command's modes (the alternate screen it left on)
// are undone.
func TestSessionEndReport(t *testing.T) {
	requireSandbox(t)
	e := newEnv(t)
	m := newTmux(t, e, 120, 30, bin+` run --log-level error -- sh -c 'mkdir -p .github/workflows && echo x >.github/workflows/a.yml; printf "\033[?1049h\033[8mhidden"'`)
	screen := m.waitScreen("exit=")
	if !strings.Contains(screen, "REVIEW: .github/workflows/a.yml") {
		t.Errorf("the end of the session did not show the exit report:\n%s", screen)
	}
	if alt := strings.TrimSpace(m.run("display-message", "-p", "#{alternate_on}")); alt != "0" {
		t.Errorf("the pane is left on the alternate screen (alternate_on %s)", alt)
	}
}
