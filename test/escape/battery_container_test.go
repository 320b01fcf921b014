package escape

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestBatteryInContainer runs the battery's rows again from inside a
// container: the attacker is a process of a container the agent started
// through the engine of `stockade run --containers`, with the workdir bound
// as a user binds it (-v $PWD:$PWD -w $PWD), sealed by the OCI hooks. Each
// row must meet the same verdict as in the plain sandbox, or the one
// inContainerWant gives with its reason; a row that cannot say anything in
// a container is left out by notInContainer, with its reason.
//
// Rows share a sandbox, its engine and one container: the image holds the
// host's static busybox, the probe and the rows' script, which prints
// "@@@ NAME" before each row's line. Rows whose fixtures clash (one removes
// a file another writes, each git row's repository) go to another sandbox
// (containerGroups): most rows run in the first.
func TestBatteryInContainer(t *testing.T) {
	rows, left := containerBattery()
	names := map[string]bool{}
	for _, r := range allRows() {
		names[r.name] = true
	}
	for n := range notInContainerRows {
		if !names[n] {
			t.Errorf("notInContainerRows names %q, which is no row of the battery", n)
		}
	}
	for n := range inContainerWant {
		if !names[n] || notInContainerRows[n] != "" {
			t.Errorf("inContainerWant names %q, which is no row of the battery or one left out", n)
		}
	}
	for _, r := range left {
		t.Logf("not in a container: %s: %s", r.name, notInContainer(r))
	}
	for _, ru := range runners(t) {
		t.Run(ru.name, func(t *testing.T) {
			host := startHost(t, ru)
			preflight(t, ru, host)
			groups := containerGroups(t, ru, host, rows)
			for i, g := range groups {
				var names []string
				for _, r := range g {
					names = append(names, r.name)
				}
				t.Logf("group%d: %s", i, strings.Join(names, " "))
			}
			start := time.Now()
			for i, g := range groups {
				runInContainer(t, ru, host, g, fmt.Sprintf("group%d", i))
			}
			t.Logf("%d rows in %d sandboxes, one container each: %v", len(rows), len(groups), time.Since(start).Round(time.Millisecond))
		})
	}
}

// containerBattery splits the battery into the rows that run in a
// container and those that are left out.
func containerBattery() (in, left []row) {
	for _, r := range allRows() {
		if notInContainer(r) != "" {
			left = append(left, r)
		} else {
			in = append(in, r)
		}
	}
	return in, left
}

// inContainerFlags are the flags a row may have and still share a
// sandbox: they add masks and protections to the workdir, and no row's
// verdict depends on their absence.
var inContainerFlags = map[string]bool{"--mask": true, "--protect": true}

// notInContainer says why a row is left out of TestBatteryInContainer, or "".
func notInContainer(r row) string {
	if why, ok := notInContainerRows[r.name]; ok {
		return why
	}
	switch {
	case r.refused != "" || r.refusedUser != "" || r.want == refused:
		return "the row is stockade refusing to start: nothing runs, in a container or not"
	case r.before != nil:
		return "the row takes two sessions (a plant, then the attack): the one sandbox of the test is a single session"
	case len(r.env) > 0:
		return "the row needs stockade started with an environment of its own (a Slurm job)"
	case strings.HasPrefix(r.name, "containers_"):
		return "a container row already: it starts containers from the sandbox"
	}
	for _, f := range r.flags {
		if strings.HasPrefix(f, "-") && !inContainerFlags[f] {
			if why, ok := flagNotInContainer[f]; ok {
				return why
			}
			return fmt.Sprintf("the row needs stockade run %s, which the shared sandbox has not", f)
		}
	}
	return ""
}

// runInContainer runs rows in one container of one sandbox as ru, and
// checks each row's line, the host fixture, and the rows' own checks.
func runInContainer(t *testing.T, ru runner, host *hostSide, all []row, name string) {
	fx := newFixture(t, ru, host, name)
	var flags []string
	var rows []row
	setupErr := map[string]error{}
	for _, r := range all {
		if r.needsRoot && os.Geteuid() != 0 {
			t.Run(r.name, func(t *testing.T) {
				t.Skip("the fixture of this row needs root; the root pass runs it for the unprivileged user")
			})
			continue
		}
		if r.setup != nil {
			if err := r.setup(fx); err != nil {
				setupErr[r.name] = err
				continue
			}
		}
		rows = append(rows, r)
		flags = append(flags, r.flags...)
	}
	for n, err := range setupErr {
		t.Run(n, func(t *testing.T) { t.Fatalf("setting up the row: %v", err) })
	}
	if len(rows) == 0 {
		return
	}
	if err := fx.chown(); err != nil {
		t.Fatal(err)
	}
	scriptDir := mkdir0755(t, "")
	script := filepath.Join(scriptDir, "rows.sh")
	if err := os.WriteFile(script, []byte(containerScript(fx, rows)), 0o644); err != nil {
		t.Fatal(err)
	}
	before, err := fx.snapshot(false)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	flags = append(flags, "--containers", "--ro", scriptDir)
	res := fx.sandbox(t, flags, sh(containerImage(script)+
		`podman --remote run --rm -v "$PWD:$PWD" -w "$PWD" img sh /bin/rows.sh`), 3*time.Minute)
	t.Logf("%s: %d rows: %v", name, len(rows), time.Since(start).Round(time.Millisecond))
	got := parseRows(res.stdout)
	if len(got) == 0 {
		t.Errorf("%s: no row ran (exit %d)\nstdout: %s\nstderr: %s", name, res.code, res.stdout, res.stderr)
		return
	}
	if res.code != 0 {
		t.Errorf("%s: the sandbox exited %d\nstderr: %s", name, res.code, res.stderr)
	}
	// The rows that must work write the workdir: what no row may change
	// is the rest of the fixture and the workdir's guarded paths.
	after, err := fx.snapshot(false)
	if err != nil {
		t.Fatal(err)
	}
	if diff := diffSnapshots(before, after); diff != "" {
		t.Errorf("%s: the host fixture changed (an escape from a container):\n%s", name, diff)
	}
	for _, r := range rows {
		t.Run(r.name, func(t *testing.T) {
			want := r.want
			if r.wantUser != "" && ru.uid != 0 {
				want = r.wantUser
			}
			if c, ok := inContainerWant[r.name]; ok {
				want = c.want
				if c.wantUser != "" && ru.uid != 0 {
					want = c.wantUser
				}
			}
			line, ran := got[r.name]
			if !ran {
				t.Fatalf("the row did not run in the container (exit %d)\nstderr: %s", res.code, res.stderr)
			}
			if line != want {
				t.Errorf("%v in a container\n got: %q\nwant: %q", fx.expand(r.args), line, want)
			}
			if r.check != nil {
				if err := r.check(fx); err != nil {
					t.Errorf("host check: %v", err)
				}
			}
		})
	}
}

// containerImage makes the image img from the host's static busybox (every
// applet), the probe and the rows' script, through the engine.
func containerImage(script string) string {
	return `set -e; d=$(mktemp -d); mkdir $d/bin $d/tmp; chmod 1777 $d/tmp; cp /bin/busybox {probe} ` + script + ` $d/bin/; ` +
		`for c in $(busybox --list); do [ $c = busybox ] || ln -s busybox $d/bin/$c; done; ` +
		`tar -C $d -cf $d.tar .; podman --remote import -q $d.tar img >/dev/null; set +e; `
}

// containerScript is the script the container runs: each row's command,
// with the probe at /bin/probe and the fixture's paths as on the host (the
// workdir is bound at its own path), its stdout after a "@@@ NAME" line.
func containerScript(fx *fixture, rows []row) string {
	var b strings.Builder
	b.WriteString("cd " + shQuote(fx.work) + "\n")
	for _, r := range rows {
		args := fx.expand(replaceAll(r.args, "{probe}", "/bin/probe"))
		fmt.Fprintf(&b, "echo '@@@ %s'\n", r.name)
		q := make([]string, len(args))
		for i, a := range args {
			q[i] = shQuote(a)
			if r.args[i] == "{uid}" {
				// The container's own id: the sandbox user is uid 0 of
				// the container's user namespace, whatever the runner.
				q[i] = `"$(id -u)"`
			}
		}
		fmt.Fprintf(&b, "(cd %s && timeout 15 %s) </dev/null 2>/dev/null\n", shQuote(fx.work), strings.Join(q, " "))
	}
	b.WriteString("echo '@@@ end'\n")
	return b.String()
}

func replaceAll(args []string, old, new string) []string {
	out := slices.Clone(args)
	for i := range out {
		out[i] = strings.ReplaceAll(out[i], old, new)
	}
	return out
}

func shQuote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// parseRows maps each row's name to what it printed.
func parseRows(out string) map[string]string {
	got := map[string]string{}
	name := ""
	var lines []string
	flush := func() {
		if name != "" {
			got[name] = strings.TrimSpace(strings.Join(lines, "\n"))
		}
	}
	for _, l := range strings.Split(out, "\n") {
		if n, ok := strings.CutPrefix(l, "@@@ "); ok {
			flush()
			name, lines = n, nil
			continue
		}
		lines = append(lines, l)
	}
	if name != "end" {
		delete(got, name) // cut short: its line is not known
	}
	return got
}
