package slurm

import (
	"bytes"
	"encoding/binary"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stockade-dev/stockade/internal/egress"
)

func TestParse(t *testing.T) {
	cases := []struct {
		args      []string
		lines     []string
		rest      []string
		wantError string
	}{
		{[]string{"-p", "debug", "-t10", "--job-name=x y", "job.sh", "-p", "a"}, []string{"--partition=debug", "--time=10", "--job-name=x y"}, []string{"job.sh", "-p", "a"}, ""},
		{[]string{"--wrap", "echo $(id)", "-H"}, []string{"--wrap=echo $(id)", "--hold"}, nil, ""},
		{[]string{"--exclusive", "--nice", "--", "x"}, []string{"--exclusive", "--nice"}, []string{"x"}, ""},
		{[]string{"--ui=0"}, nil, nil, "option --ui is not on stockade's Slurm allowlist"},
		{[]string{"-X"}, nil, nil, "option -X is not on stockade's Slurm allowlist"},
		{[]string{"-Hv"}, nil, nil, "write each short option separately"},
		{[]string{"--hold=1"}, nil, nil, "takes no value"},
		{[]string{"-p"}, nil, nil, "needs a value"},
		// A refused flag is refused before it takes a value.
		{[]string{"--get-user-env", "job.sh"}, nil, nil, "--get-user-env loads the user's login environment"},
		{[]string{"--uid", "0", "job.sh"}, nil, nil, "--uid runs the job as another user"},
	}
	for _, c := range cases {
		p, err := parse(sbatchFlags(), c.args)
		if c.wantError != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantError) {
				t.Errorf("parse(%q) = %v, want an error naming %q", c.args, err, c.wantError)
			}
			continue
		}
		if err != nil {
			t.Errorf("parse(%q): %v", c.args, err)
			continue
		}
		var lines []string
		for _, o := range p.opts {
			lines = append(lines, o.line())
		}
		if !reflect.DeepEqual(lines, c.lines) || !reflect.DeepEqual(p.rest, c.rest) {
			t.Errorf("parse(%q) = %q %q, want %q %q", c.args, lines, p.rest, c.lines, c.rest)
		}
	}
}

func TestDirectives(t *testing.T) {
	script := "#!/bin/bash\n# a comment\n#SBATCH -J 'my job' --time=5 # trailing\n\n#SBATCH --uid=0\necho hi\n#SBATCH --gid=0\n"
	got, err := directives([]byte(script))
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"-J", "my job", "--time=5", "--uid=0"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("directives = %q, want %q (none after the first command)", got, want)
	}
	if _, err := directives([]byte("#!/bin/sh\n#SBATCH -J 'open\n")); err == nil {
		t.Error("an unclosed quote in #SBATCH was accepted")
	}
}

func newChaperon(t *testing.T, admin Admin) (*Chaperon, *[]string) {
	t.Helper()
	root := t.TempDir()
	work := filepath.Join(root, "proj")
	os.MkdirAll(work, 0o700)
	var events []string
	c, err := New(Config{Session: "s1", Workdir: work, Scope: ScopeSession, Stockade: "/nonexistent/stockade",
		State: filepath.Join(root, "state"), Env: []string{"PATH=/nonexistent"}, Admin: admin},
		func(ev string, f map[string]any) { r, _ := f["reason"].(string); events = append(events, ev+": "+r) })
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	c.trusted = func(string) error { return nil } // the tests' fake commands are in temporary directories
	return c, &events
}

// TestRefused: requests the chaperon refuses before any Slurm command
// runs (the PATH here has none), each with its reason and an event.
func TestRefused(t *testing.T) {
	c, events := newChaperon(t, Admin{})
	w := c.cfg.Workdir
	script := []byte("#!/bin/sh\ntrue\n")
	cases := []struct {
		req    Request
		reason string
	}{
		{Request{Command: "sbatch", Args: []string{"--uid=0"}, Cwd: w, Script: script}, "runs the job as another user"},
		{Request{Command: "sbatch", Args: []string{"--chdir=../.."}, Cwd: w, Script: script}, "is outside the project"},
		{Request{Command: "sbatch", Args: []string{"-o", w + "/../x"}, Cwd: w, Script: script}, "is outside the project"},
		{Request{Command: "sbatch", Args: []string{"-o", w}, Cwd: w, Script: script}, "is outside the project"},
		{Request{Command: "sbatch", Args: []string{"--export=PATH=/x"}, Cwd: w, Script: script}, "not a variable the administrator allows"},
		{Request{Command: "sbatch", Args: []string{"--account=big"}, Cwd: w, Script: script}, "charges an account"},
		{Request{Command: "sbatch", Cwd: w, Script: []byte("#!/bin/sh\n#SBATCH --prolog=/x\n")}, "outside the sandbox"},
		{Request{Command: "sbatch", Args: []string{"--wrap=true"}, Cwd: "/"}, "outside the project"},
		{Request{Command: "sbatch", Args: []string{"--wrap=true"}, Cwd: w + "/../proj2"}, "outside the project"},
		{Request{Command: "sbatch", Args: []string{"--wrap", "true", "-J", "a\x00b"}, Cwd: w}, "NUL byte"},
		{Request{Command: "srun", Args: []string{"--jobid=5", "true"}, Cwd: w}, "joins another allocation"},
		{Request{Command: "sbatch", Args: []string{"--dependency=afterok:7", "--wrap=true"}, Cwd: w}, "job 7 was not submitted"},
		{Request{Command: "sbatch", Args: []string{"-d", "singleton,afterany:8:9", "--wrap=true"}, Cwd: w}, "job 8 was not submitted"},
		{Request{Command: "srun", Args: []string{"--multi-prog", "x.conf"}, Cwd: w}, "programs named in a file"},
		{Request{Command: "salloc", Cwd: w}, "salloc opens an allocation"},
		{Request{Command: "sh", Args: []string{"-c", "id"}, Cwd: w}, "is not a Slurm command stockade answers"},
		{Request{Command: "squeue", Args: []string{"-i", "5"}, Cwd: w}, "repeats until interrupted"},
		{Request{Command: "scancel", Args: []string{"42"}, Cwd: w}, "job 42 was not submitted through stockade"},
		{Request{Command: "scancel", Args: []string{"--me"}, Cwd: w}, "name the job ids"},
		{Request{Command: "scontrol", Args: []string{"hold", "42"}, Cwd: w}, "job 42 was not submitted"},
		{Request{Command: "scontrol", Args: []string{"requeue", "1,2"}, Cwd: w}, "job 1 was not submitted"},
		{Request{Command: "scontrol", Args: []string{"reconfigure"}, Cwd: w}, "administrator's command"},
		{Request{Command: "scontrol", Args: []string{"show", "config"}, Cwd: w}, "reveals the cluster's configuration"},
		{Request{Command: "scontrol", Cwd: w}, "interactive mode"},
		{Request{Command: "sacctmgr", Args: []string{"list", "accounts"}, Cwd: w}, "enumerates the cluster's users"},
		{Request{Command: "sacctmgr", Args: []string{"-i", "delete", "user", "x"}, Cwd: w}, "not on stockade's allowlist"},
		{Request{Command: "sacct", Args: []string{"-u", "root"}, Cwd: w}, "other users' jobs"},
		{Request{Command: "sinfo", Args: []string{"--iterate=1"}, Cwd: w}, "repeats until interrupted"},
		// scontrol and sacctmgr read an option after the subcommand too.
		{Request{Command: "scontrol", Args: []string{"show", "node", "--clusters=other"}, Cwd: w}, "as an option wherever it stands"},
		{Request{Command: "sacctmgr", Args: []string{"show", "qos", "-M", "other"}, Cwd: w}, "as an option wherever it stands"},
		// srun splits its command line at a bare ":" into components
		// of a heterogeneous job, each with a command of its own.
		{Request{Command: "srun", Args: []string{"-n1", "true", ":", "-n1", "/bin/sh", "-c", "id"}, Cwd: w}, "heterogeneous job"},
		{Request{Command: "srun", Args: []string{":", "true"}, Cwd: w}, "heterogeneous job"},
		// A node list with a / is a file Slurm reads on the host.
		{Request{Command: "srun", Args: []string{"-w", "/dev/zero", "true"}, Cwd: w}, "--nodelist /dev/zero names a file"},
		{Request{Command: "srun", Args: []string{"--exclude=./nodes", "true"}, Cwd: w}, "--exclude ./nodes names a file"},
		{Request{Command: "sbatch", Args: []string{"--nodelist=" + w + "/../../.ssh/id_rsa", "--wrap=true"}, Cwd: w}, "names a file"},
		{Request{Command: "sbatch", Cwd: w, Script: []byte("#!/bin/sh\n#SBATCH -x /etc/passwd\n")}, "names a file"},
		{Request{Command: "sinfo", Args: []string{"-n", "/etc/passwd"}, Cwd: w}, "names a file"},
	}
	for _, tc := range cases {
		*events = nil
		rep := c.Answer(tc.req)
		msg := string(rep.Stderr)
		if rep.Code != 1 || !strings.Contains(msg, "refused by stockade: ") || !strings.Contains(msg, tc.reason) || strings.Count(msg, "\n") != 1 {
			t.Errorf("%s %q: exit %d %q; want exit 1 and one line naming %q", tc.req.Command, tc.req.Args, rep.Code, msg, tc.reason)
		}
		if len(*events) != 1 || !strings.HasPrefix((*events)[0], EventRefused) {
			t.Errorf("%s %q: events %q, want one %s", tc.req.Command, tc.req.Args, *events, EventRefused)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(c.cfg.State, "jobs")); len(entries) != 0 {
		t.Errorf("refused submissions left %d job directories", len(entries))
	}
}

// TestAdmin: the administrator may allow --account, a flag stockade does
// not know, and variables for --export; never a flag refused for what it
// does.
func TestAdmin(t *testing.T) {
	if _, err := ParseAdmin([]byte(`{"allow_flags": ["uid"]}`), "/etc/x.json"); err == nil || !strings.Contains(err.Error(), "never passes it on") {
		t.Errorf("allow_flags uid: %v, want a refusal", err)
	}
	if _, err := ParseAdmin([]byte(`{"allow_flags": ["multi-prog"]}`), "/etc/x.json"); err == nil || !strings.Contains(err.Error(), "never passes it on") {
		t.Errorf("allow_flags multi-prog (srun's): %v, want a refusal", err)
	}
	if _, err := ParseAdmin([]byte(`{"allow_flagz": []}`), "/etc/x.json"); err == nil {
		t.Error("an unknown key was accepted")
	}
	a, err := ParseAdmin([]byte(`{"allow_flags": ["account", "reservation"], "allow_export": ["OMP_NUM_THREADS"]}`), "/etc/x.json")
	if err != nil {
		t.Fatal(err)
	}
	c, _ := newChaperon(t, a)
	p, err := parse(c.cfg.table(sbatchFlags()), []string{"--account=a", "--reservation", "r", "--export=ALL,OMP_NUM_THREADS=4", "x.sh"})
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.check(p.opts, c.cfg.Workdir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(s.pass, []string{"--account=a", "--reservation=r"}) || !reflect.DeepEqual(s.exports, []string{"OMP_NUM_THREADS=4"}) {
		t.Errorf("pass %q exports %q", s.pass, s.exports)
	}
}

// TestWrapper: the job's batch script hands every value to the wrapper
// entry as one argument, whatever it holds, and the wrapper entry adds
// the SLURM_* variables by name to stockade run's flags.
func TestWrapper(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the wrapper is a Linux job script")
	}
	c, _ := newChaperon(t, Admin{})
	dir := t.TempDir()
	printer := filepath.Join(dir, "printargs")
	os.WriteFile(printer, []byte("#!/bin/sh\nfor a; do printf '%s\\0' \"$a\"; done\n"), 0o755)
	c.cfg.Stockade = printer
	hostile := "a'b\"c $(touch " + dir + "/pwned) `id` \n;d"
	c.cfg.RunArgs = []string{"--workdir", c.cfg.Workdir, "--mask", hostile}
	s := submission{dir: c.cfg.Workdir + "/" + hostile, out: c.cfg.Workdir + "/o%j", exports: []string{"X=" + hostile}}
	jobDir, err := c.jobDir()
	if err != nil {
		t.Fatal(err)
	}
	script := c.batchScript(jobDir, s, []string{"script", hostile})
	cmd := exec.Command("/bin/sh", "-s")
	cmd.Stdin = strings.NewReader(script)
	cmd.Env = []string{"PATH=/nonexistent"}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%v\n%s", err, script)
	}
	got := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	run := []string{"--workdir", c.cfg.Workdir, "--mask", hostile, "--slurm", "--slurm-step", "--ro", jobDir, "--log-level", "error", "--ro", printer, "--env", "X=" + hostile}
	rest := []string{"--", printer, JobEntry, s.dir, s.out, "", "", "", "--", "script", hostile}
	want := append(append([]string{WrapEntry, filepath.Join(jobDir, "stockade-%j.log"), filepath.Join(jobDir, jobIDFile), strconv.Itoa(len(run))}, run...), rest...)
	if !reflect.DeepEqual(got, want) {
		t.Errorf("the batch script ran\n%q\nwant\n%q", got, want)
	}
	if _, err := os.Lstat(filepath.Join(dir, "pwned")); err == nil {
		t.Error("a value ran as a shell command")
	}
	if strings.Contains(script, "$(") && !strings.Contains(script, "'") {
		t.Error("the script holds an unquoted command substitution")
	}

	// The wrapper entry's command: stockade run with the flags, the
	// job's Slurm variables by name (no other), and the rest.
	log, idFile, argv, err := wrapArgv(got[1:], []string{"PATH=/usr/bin:/bin", "SLURM_JOB_ID=7", "SLURMD_NODENAME=n1", "NOT_SLURM=1", "SLURM_X$(id)=1", "SLURMX=2"})
	if err != nil {
		t.Fatal(err)
	}
	wantArgv := append(append(append([]string{"run"}, run...), "--env", "SLURM_JOB_ID", "--env", "SLURMD_NODENAME"), rest...)
	if log != want[1] || idFile != want[2] || !reflect.DeepEqual(argv, wantArgv) {
		t.Errorf("the wrapper entry runs %q (log %q, id %q)\nwant\n%q", argv, log, idFile, wantArgv)
	}
	for _, bad := range [][]string{nil, {"l", "i"}, {"l", "i", "x"}, {"l", "i", "-1"}, {"l", "i", "3", "a"}} {
		if _, _, _, err := wrapArgv(bad, nil); err == nil {
			t.Errorf("wrapArgv(%q) was taken", bad)
		}
	}
}

// TestTrustedCommands: a real Slurm command is run only from where root
// alone can write, outside the trees the sandbox writes.
func TestTrustedCommands(t *testing.T) {
	sh, err := filepath.EvalSymlinks("/bin/sh")
	if err != nil {
		t.Skip("no /bin/sh")
	}
	if err := Trusted(sh, nil); err != nil && os.Getuid() == 0 {
		t.Errorf("%s is not trusted: %v", sh, err)
	}
	if err := Trusted(sh, []string{filepath.Dir(sh)}); err == nil {
		t.Errorf("%s is trusted inside a tree the sandbox writes", sh)
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o777) // anyone can write it
	p := filepath.Join(dir, "sinfo")
	os.WriteFile(p, []byte("#!/bin/sh\n"), 0o755)
	if err := Trusted(p, nil); err == nil {
		t.Errorf("%s is trusted", p)
	}
	// A root's directory in sticky /tmp is root's to change alone.
	if os.Getuid() == 0 {
		own := t.TempDir()
		os.Chmod(own, 0o755)
		q := filepath.Join(own, "stockade")
		os.WriteFile(q, []byte("#!/bin/sh\n"), 0o755)
		if err := Trusted(q, nil); err != nil && strings.HasPrefix(own, "/tmp/") {
			t.Errorf("%s in a root's directory in /tmp is not trusted: %v", q, err)
		}
		os.Chmod(q, 0o775)
		if err := Trusted(q, nil); err == nil {
			t.Errorf("%s, writable by its group, is trusted", q)
		}
	}
	// lookPath passes it over, and says so, rather than running it.
	c, _ := newChaperon(t, Admin{})
	c.trusted = func(p string) error { return Trusted(p, nil) }
	c.cfg.Env = []string{"PATH=" + dir}
	if got, err := c.lookPath("sinfo"); err == nil || !strings.Contains(err.Error(), p) {
		t.Errorf("lookPath found %q (%v), want it passed over", got, err)
	}
	rep := c.Answer(Request{Command: "sinfo", Cwd: c.cfg.Workdir})
	if rep.Code == 0 || !strings.Contains(string(rep.Stderr), "passed over") {
		t.Errorf("sinfo from a directory anyone can write: exit %d %s", rep.Code, rep.Stderr)
	}
}

// TestMalformed: a connection that sends garbage gets an error reply, and
// the chaperon goes on serving.
func TestMalformed(t *testing.T) {
	c, _ := newChaperon(t, Admin{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go c.Serve(ln)
	frame := func(b []byte) []byte {
		var n [4]byte
		binary.BigEndian.PutUint32(n[:], uint32(len(b)))
		return append(n[:], b...)
	}
	for _, raw := range [][]byte{nil, {0, 0}, {0xff, 0xff, 0xff, 0xff}, frame([]byte("nope")), frame([]byte(`[1,2]`)),
		frame([]byte(`{"command":"sbatch","args":"not a list"}`)), frame([]byte(`{"command":"sbatch\u0000"}`))} {
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		conn.Write(raw)
		conn.(*net.TCPConn).CloseWrite()
		var rep Reply
		err = readFrame(conn, &rep, MaxFrame)
		conn.Close()
		if err != nil || rep.Code != 1 || len(rep.Stderr) == 0 {
			t.Errorf("garbage %q: reply %+v, %v; want an error reply", raw, rep, err)
		}
	}
	rep, err := Call(ln.Addr().String(), Request{Command: "salloc"})
	if err != nil || !bytes.Contains(rep.Stderr, []byte("salloc opens an allocation")) {
		t.Errorf("after the garbage: %+v %v", rep, err)
	}
}

// TestCloseEndsConnections: the chaperon dies with the session, even with
// a connection that never sends its request.
func TestCloseEndsConnections(t *testing.T) {
	c, _ := newChaperon(t, Admin{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go c.Serve(ln)
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// A round trip on a second connection: the first is accepted by now.
	if _, err := Call(ln.Addr().String(), Request{Command: "salloc"}); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { c.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(readTimeout / 2):
		t.Fatal("Close waited for an idle connection")
	}
	if _, err := conn.Read(make([]byte, 1)); err == nil {
		t.Error("the idle connection is still open after Close")
	}
}

// TestConnectionCap: connections past maxConns get an error reply; the
// chaperon serves again once they go.
func TestConnectionCap(t *testing.T) {
	c, _ := newChaperon(t, Admin{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go c.Serve(ln)
	var held []net.Conn
	for range maxConns {
		conn, err := net.Dial("tcp", ln.Addr().String())
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, conn)
	}
	// The held connections are accepted in order; the next one is over.
	rep, err := Call(ln.Addr().String(), Request{Command: "salloc"})
	if err != nil || !bytes.Contains(rep.Stderr, []byte("serving 64 requests already")) {
		t.Errorf("over the cap: %+v %v", rep, err)
	}
	for _, conn := range held {
		conn.Close()
	}
	// Their places free as the chaperon sees them close.
	for i := 0; ; i++ {
		rep, err = Call(ln.Addr().String(), Request{Command: "salloc"})
		if err == nil && bytes.Contains(rep.Stderr, []byte("salloc opens")) {
			break
		}
		if i > 1000 {
			t.Fatalf("the chaperon did not serve again after the connections closed: %+v %v", rep, err)
		}
		runtime.Gosched()
	}
}

// TestNetworkAtSubmission: a job takes the session's egress rules as they
// are when it is submitted, not as they were at the start.
func TestNetworkAtSubmission(t *testing.T) {
	c, _ := newChaperon(t, Admin{})
	c.cfg.Network = []string{"--agent-policy", "deny", "--agent-allow", "start.example"}
	wrapper := func() string {
		jobDir, err := c.jobDir()
		if err != nil {
			t.Fatal(err)
		}
		return c.batchScript(jobDir, submission{dir: c.cfg.Workdir}, []string{"script"})
	}
	if w := wrapper(); !strings.Contains(w, `'--agent-allow' 'start.example'`) {
		t.Errorf("without the live rules the job lacks the start's:\n%s", w)
	}
	allow, err := egress.ParseRule("now.example")
	if err != nil {
		t.Fatal(err)
	}
	rules := egress.NewRules(egress.ModeDeny, []egress.Rule{allow}, nil)
	c.SetRules(rules)
	w := wrapper()
	if !strings.Contains(w, `'--agent-policy' 'deny' '--agent-allow' 'now.example'`) || strings.Contains(w, "start.example") {
		t.Errorf("the job does not have the rules of the moment:\n%s", w)
	}
	rules.Reset(allow)
	if w := wrapper(); strings.Contains(w, "now.example") {
		t.Errorf("a rule removed at runtime is still the job's:\n%s", w)
	}
}

// TestInScopeForms: a job id is in scope only in one of Slurm's own
// forms: the real commands split a job list at spaces as well as commas,
// so "42+0 43" must not pass as job 42 (it held and requeued job 43).
func TestInScopeForms(t *testing.T) {
	c, _ := newChaperon(t, Admin{})
	scoped := []string{"42"}
	for _, id := range []string{"42", "42_3", "42_*", "42_[1-3,5%2]", "42+0", "42.batch", "42.extern", "42_3.0", "42+1.7"} {
		if !c.inScope(id, scoped) {
			t.Errorf("%q is not in scope", id)
		}
	}
	for _, id := range []string{"", "43", "42+0 43", "42 43", "42\t43", "42\n43", "42,43", "42_3 43", "42.batch 43", "-42", "42=x", "42+", "42_", "42.", "0x2a", "42_[1-3] 43", "４２"} {
		if c.inScope(id, scoped) {
			t.Errorf("%q is in scope", id)
		}
	}
	// Through scontrol, as the agent would write it, with 42 the
	// session's own.
	if err := c.register("42"); err != nil {
		t.Fatal(err)
	}
	rep := c.Answer(Request{Command: "scontrol", Args: []string{"hold", "42+0 43"}, Cwd: c.cfg.Workdir})
	if rep.Code == 0 || !strings.Contains(string(rep.Stderr), "refused by stockade") {
		t.Errorf("scontrol hold \"42+0 43\": exit %d %s", rep.Code, rep.Stderr)
	}
}
