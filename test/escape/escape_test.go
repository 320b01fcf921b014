package escape

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/stockade-dev/stockade/internal/slurm"
	"github.com/stockade-dev/stockade/internal/testenv"
)

// row is one attempt, run once per user.
type row struct {
	name string
	// setup prepares the host side of the row's fixture (as root, before chown).
	setup func(fx *fixture) error
	// needsRoot marks a setup that only root can do (a setuid file).
	needsRoot bool
	flags     []string // stockade run flags
	before    []string // a first sandbox run that must exit 0 (persistence)
	// beforeReports, when set, must be in the first run's stderr (what
	// its exit checks said); beforeReportsUser replaces it for an
	// unprivileged runner.
	beforeReports, beforeReportsUser string
	args                             []string // the command in the sandbox: probe(...) or sh(...)
	want                             string   // the one line it must print
	// wantUser, when set, replaces want for an unprivileged runner: the kernel
	// refuses such a user earlier, for a reason the row's comment gives.
	wantUser string
	// beforeFlags are added to flags for the first run only (--workdir
	// {other}: it runs in another project).
	beforeFlags []string
	// refused, when set, says that stockade must refuse to start: exit 125,
	// one line on stderr that contains it (besides running as root's
	// loosening), nothing run and nothing made; want is then "REFUSED".
	// refusedUser is the same for an unprivileged runner only.
	refused, refusedUser string
	// refusedExit is the exit status of the refusal when it is not 125
	// (2: a usage error, one that no setup can fix).
	refusedExit int
	// mutates lets an OK row change guarded host files on purpose (--allow-hooks).
	mutates bool
	// check runs on the host after the row, for what the output cannot show.
	check func(fx *fixture) error
	// refusedLate: the refusal comes from the plan (a link, a hard link),
	// made once the sandbox HOME exists, which may stay, and after the
	// start line: the refusal is the last line.
	refusedLate bool
	timeout     time.Duration // default probeTimeout
	// env is added to stockade's environment (a job's SLURM_JOB_ID).
	env []string
	// plainStderr: what stockade prints of the run (its exit report
	// among it) holds no control character but newlines and tabs.
	plainStderr bool
	// stdin, when set, is a path (placeholders expanded) opened read-only
	// as stockade's stdin for the row's run: a file or a directory of the
	// host's, as a shell's redirect hands it (< FILE). Otherwise stdin is
	// /dev/null.
	stdin string
	// shownAfter, when set, is a line of stockade's exit report that the
	// row's run must leave visible: stockade's stderr is a terminal (a
	// pty; stdout stays a pipe), and what the command's output turned on
	// there (concealed text, SGR 8; the alternate screen) must be turned
	// off again before the line.
	shownAfter string
}

const probeTimeout = 20 * time.Second

// probe runs the probe binary with args inside the sandbox.
func probe(args ...string) []string { return append([]string{"{probe}"}, args...) }

// sh runs script with /bin/sh -c inside the sandbox.
func sh(script string) []string { return []string{"/bin/sh", "-c", script} }

// allRows is every table of the battery, in file order.
func allRows() []row {
	var rows []row
	for _, t := range [][]row{fsRows, protectRows, linkRows, depthRows, procRows, kernelRows, seccompRows, netRows, egressRows, homeRows, privateRows, workRows, nameRows, limitsRows, gitRows, reviewRows, containerRows, sshRows, ghRows, whyRows, gitconfigRows, slurmRows} {
		rows = append(rows, t...)
	}
	return rows
}

var (
	stockadeBin string // copies in a 0755 directory that every test user can read
	// slurmBin is the stockade the --slurm rows run: STOCKADE_BIN itself
	// where it is root's and only root's to change (slurm.Trusted), as
	// --slurm requires of the binary every job starts on a node; the copy
	// otherwise, which in a pass as the user is the user's, and refused.
	slurmBin string
	probeBin string
	binDir   string
	mustWork = testenv.MustWork()

	// parallel bounds the sandboxes running at once (2-core CI machines).
	parallel = make(chan struct{}, 4)

	tallyMu sync.Mutex
	tally   = map[string][2]int{} // runner name → {passed, failed}
)

func TestMain(m *testing.M) {
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "stockade-escape-bin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "escape:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	if err := os.Chmod(dir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "escape:", err)
		return 1
	}
	binDir = dir
	if stockadeBin, err = install("STOCKADE_BIN", "./cmd/stockade", "stockade"); err == nil {
		probeBin, err = install("STOCKADE_PROBE", "./test/escape/probe", "probe")
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "escape:", err)
		return 1
	}
	slurmBin = stockadeBin
	if src, err := filepath.EvalSymlinks(os.Getenv("STOCKADE_BIN")); err == nil && filepath.IsAbs(src) && slurm.Trusted(src, nil) == nil {
		slurmBin = src
	}
	code := m.Run()
	summary()
	return code
}

// install copies the binary named by env into binDir, or builds pkg there.
func install(env, pkg, name string) (string, error) {
	dst := filepath.Join(binDir, name)
	if src := os.Getenv(env); src != "" {
		b, err := os.ReadFile(src)
		if err != nil {
			return "", fmt.Errorf("reading %s=%s: %w", env, src, err)
		}
		return dst, os.WriteFile(dst, b, 0o755)
	}
	if err := testenv.Build(dst, pkg); err != nil {
		return "", fmt.Errorf("building %s (set %s to use a prebuilt one): %w", pkg, env, err)
	}
	return dst, os.Chmod(dst, 0o755)
}

func summary() {
	tallyMu.Lock()
	defer tallyMu.Unlock()
	var per []string
	for _, r := range []string{"root", "user"} {
		if c, ok := tally[r]; ok {
			per = append(per, fmt.Sprintf("%s %d passed %d failed", r, c[0], c[1]))
		}
	}
	users := "as the invoking user"
	if _, ok := tally["root"]; ok {
		users = "as root and as " + testUser
	}
	fmt.Printf("escape battery: %d rows, %s (%s)\n", len(allRows()), users, strings.Join(per, "; "))
}

func TestEscape(t *testing.T) {
	rows := allRows()
	seen := map[string]bool{}
	for _, r := range rows {
		if seen[r.name] || r.want == "" || len(r.args) == 0 {
			t.Fatalf("row %q: duplicate name, or no want or args", r.name)
		}
		seen[r.name] = true
	}
	for _, ru := range runners(t) {
		t.Run(ru.name, func(t *testing.T) {
			host := startHost(t, ru)
			preflight(t, ru, host)
			for _, r := range rows {
				t.Run(r.name, func(t *testing.T) {
					t.Parallel()
					parallel <- struct{}{}
					defer func() { <-parallel }()
					runRow(t, ru, host, r)
					tallyMu.Lock()
					c := tally[ru.name]
					if t.Failed() {
						c[1]++
					} else if !t.Skipped() {
						c[0]++
					}
					tally[ru.name] = c
					tallyMu.Unlock()
				})
			}
		})
	}
}

// preflight skips (or, with STOCKADE_MUST_WORK=1, fails) when this kernel cannot
// build the sandbox at all: then no row could say anything.
func preflight(t *testing.T, ru runner, host *hostSide) {
	fx := newFixture(t, ru, host, "preflight")
	if err := fx.chown(); err != nil {
		t.Fatal(err)
	}
	res := fx.sandbox(t, nil, []string{"/bin/true"}, probeTimeout)
	if res.code == 0 {
		return
	}
	msg := fmt.Sprintf("stockade cannot build a sandbox here (exit %d): %s", res.code, res.stderr)
	if mustWork {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

func runRow(t *testing.T, ru runner, host *hostSide, r row) {
	fx := newFixture(t, ru, host, r.name)
	if r.needsRoot && os.Geteuid() != 0 {
		// Not a gap in CI: scripts/test.sh runs the battery as root first,
		// and that pass runs this row as the unprivileged user too, with
		// the fixture root built for it.
		t.Skip("the fixture of this row needs root; the root pass runs it for the unprivileged user")
	}
	if r.setup != nil {
		if err := r.setup(fx); err != nil {
			t.Fatalf("setting up the row: %v", err) // never a silent pass
		}
	}
	if err := fx.chown(); err != nil {
		t.Fatal(err)
	}
	want, refused := r.want, r.refused
	if r.wantUser != "" && ru.uid != 0 {
		want = r.wantUser
	}
	if r.refusedUser != "" && ru.uid != 0 {
		refused = r.refusedUser
	}
	denial := strings.HasPrefix(want, "DENIED") || refused != ""
	timeout := r.timeout
	if timeout == 0 {
		timeout = probeTimeout
	}
	if r.before != nil {
		// What the first run plants is the attack's setup: the host is
		// snapshotted after it.
		res := fx.sandbox(t, append(slices.Clone(r.flags), r.beforeFlags...), r.before, timeout, r.env...)
		if res.code != 0 {
			t.Fatalf("first run: exit %d\nstdout: %s\nstderr: %s", res.code, res.stdout, res.stderr)
		}
		reports := r.beforeReports
		if r.beforeReportsUser != "" && ru.uid != 0 {
			reports = r.beforeReportsUser
		}
		if want := fx.expand([]string{reports})[0]; reports != "" && !strings.Contains(res.stderr, want) {
			t.Errorf("the first run's exit checks did not report %q\nstderr: %s", want, res.stderr)
		}
	}
	before, err := fx.snapshot(denial)
	if err != nil {
		t.Fatal(err)
	}
	fx.stdin, fx.ttyStderr = r.stdin, r.shownAfter != ""
	res := fx.sandbox(t, r.flags, r.args, timeout, r.env...)
	fx.stdin, fx.ttyStderr = "", false
	got := strings.TrimSpace(res.stdout)
	if r.shownAfter != "" && !shownAfter(res.stderr, fx.expand([]string{r.shownAfter})[0]) {
		t.Errorf("the exit report %q is not shown after what the command did to the terminal:\n%q", r.shownAfter, res.stderr)
	}
	if r.plainStderr && strings.ContainsFunc(res.stderr, func(c rune) bool { return c < 0x20 && c != '\n' && c != '\t' || c >= 0x7f && c <= 0x9f }) {
		t.Errorf("stockade printed a control character the command chose:\n%q", res.stderr)
	}
	switch {
	case refused != "":
		line := strings.TrimSpace(strings.Join(stderrLines(res.stderr), "\n"))
		if r.refusedLate { // after the start line and its warnings: the last line
			line = line[strings.LastIndexByte(line, '\n')+1:]
		}
		exit := 125
		if r.refusedExit != 0 {
			exit = r.refusedExit
		}
		if res.code != exit || got != "" || strings.Contains(line, "\n") || !strings.Contains(line, refused) {
			t.Errorf("%v\n got: %q (exit %d)\nwant: refused (exit %d) with one line containing %q\nstderr: %s",
				fx.expand(r.args), got, res.code, exit, refused, res.stderr)
		}
		if _, err := os.Lstat(fx.sandboxHm); err == nil && !r.refusedLate {
			t.Errorf("a refused start made the sandbox HOME %s", fx.sandboxHm)
		}
	case got != want || res.code != 0:
		t.Errorf("%v\n got: %q (exit %d)\nwant: %q\nstderr: %s", fx.expand(r.args), got, res.code, want, res.stderr)
	}
	if !r.mutates {
		after, err := fx.snapshot(denial)
		if err != nil {
			t.Fatal(err)
		}
		if diff := diffSnapshots(before, after); diff != "" {
			t.Errorf("the host fixture changed (an escape):\n%s", diff)
		}
	}
	if r.check != nil {
		if err := r.check(fx); err != nil {
			t.Errorf("host check: %v", err)
		}
	}
}

type result struct {
	stdout, stderr string
	code           int
}

// sandbox runs `stockade run FLAGS -- ARGS` as the row's user, with a credential-
// laden environment and an inherited secret fd, the way an agent would be started
// from a developer's shell.
func (fx *fixture) sandbox(t *testing.T, flags, args []string, timeout time.Duration, env ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	argv := []string{"run", "--log-level=error", "--workdir", fx.work, "--ro", binDir}
	argv = append(append(append(argv, fx.expand(flags)...), "--"), fx.expand(args)...)
	exe := stockadeBin
	if slices.Contains(flags, "--slurm") {
		exe = slurmBin
	}
	cmd := exec.CommandContext(ctx, exe, argv...)
	cmd.Dir = fx.work
	cmd.Env = append(fx.env(), fx.expand(env)...)
	secret, err := os.Open(filepath.Join(fx.home, ".ssh", "id_rsa"))
	if err != nil {
		t.Fatalf("opening the fd to leak: %v", err)
	}
	defer secret.Close()
	cmd.ExtraFiles = []*os.File{secret} // fd 3 of stockade: must not reach the agent
	if fx.ru.cred != nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: fx.ru.cred}
	}
	if fx.stdin != "" {
		// Non-blocking: a FIFO opens with no writer.
		in, err := os.OpenFile(fx.expand([]string{fx.stdin})[0], os.O_RDONLY|syscall.O_NONBLOCK, 0)
		if err != nil {
			t.Fatalf("opening the row's stdin: %v", err)
		}
		defer in.Close()
		cmd.Stdin = in // an *os.File: handed over as it is
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr // stdin: /dev/null unless the row's
	var read chan struct{}
	if fx.ttyStderr {
		master, slave, err := pty.Open()
		if err != nil {
			t.Fatalf("opening a pty for stockade's stderr: %v", err)
		}
		defer master.Close()
		cmd.Stderr, read = slave, make(chan struct{})
		go func() {
			defer close(read)
			stderr.ReadFrom(master) // EIO once stockade and everything it started are gone
		}()
		defer slave.Close()
	}
	err = cmd.Start()
	if err == nil {
		if f, ok := cmd.Stderr.(*os.File); ok {
			f.Close() // stockade's copy only
		}
		err = cmd.Wait()
	}
	if read != nil {
		<-read
	}
	code := -1
	if cmd.ProcessState != nil {
		code = cmd.ProcessState.ExitCode()
	}
	if ctx.Err() != nil {
		stderr.WriteString(fmt.Sprintf("\n(killed after %v)", timeout))
	} else if err != nil && code < 0 {
		t.Fatalf("running stockade: %v", err)
	}
	return result{stdout.String(), stderr.String(), code}
}

// shownAfter reports whether line is in the terminal stream out, visible
// and on a clean line of its own: after what was before it in the stream,
// no concealment (SGR 8), no scroll region (below it a line feed does
// not scroll: each line of the report overwrote the last) and no
// alternate screen is on (leaving 1049
// restores the attributes saved on entry, as xterm and tmux do), and the
// last move of the cursor to a place the command chose (an absolute
// position but stockade's own move to the last line, a move up, a scroll
// region, a restore) is followed by an erase to the end of the screen
// (ESC [ J), so that the line is not written over text the command left
// to look like its continuation.
func shownAfter(out, line string) bool {
	i := strings.Index(out, line)
	if i < 0 {
		return false
	}
	before := out[:i]
	conceal, saved, alt, region := false, false, false, false
	placed, erased := -1, -1
	for j := 0; j < len(before); j++ {
		if before[j] != 0x1b || j+1 == len(before) {
			continue
		}
		if before[j+1] == '8' {
			placed = j
			continue
		}
		if before[j+1] != '[' {
			continue
		}
		k := j + 2
		for k < len(before) && (before[k] < 0x40 || before[k] > 0x7e) {
			k++
		}
		if k == len(before) {
			break
		}
		params, final := before[j+2:k], before[k]
		private := strings.HasPrefix(params, "?")
		switch {
		case final == 'm' && !private:
			for _, p := range strings.Split(params, ";") {
				switch p {
				case "", "0", "28":
					conceal = false
				case "8":
					conceal = true
				}
			}
		case (final == 'h' || final == 'l') && private:
			for _, p := range strings.Split(params[1:], ";") {
				switch {
				case p == "1049" && final == 'h':
					saved, alt = conceal, true
				case p == "1049":
					alt, conceal, placed = false, saved, j
				case p == "47" || p == "1047":
					alt = final == 'h'
				}
			}
		case final == 'H' || final == 'f':
			if params != "999;1" {
				placed = j
			}
		case final == 'r' && !private:
			placed, region = j, strings.Trim(params, "0;") != ""
		case final == 'A' || final == 'd':
			placed = j
		case final == 'J' && (params == "" || params == "0"):
			erased = j
		}
		j = k
	}
	return !conceal && !alt && !region && (placed < 0 || erased > placed)
}

// stderrLines are the lines of stockade's stderr but the loosening every
// run as root prints.
func stderrLines(s string) []string {
	var out []string
	for _, l := range strings.Split(strings.TrimSpace(s), "\n") {
		if !strings.HasPrefix(l, "stockade: LOOSENED: running as root") {
			out = append(out, l)
		}
	}
	return out
}
