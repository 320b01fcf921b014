package slurm

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stockade-dev/stockade/internal/testenv"
)

// deniedHost is the fake model provider of the test network
// (scripts/testnet.sh, test/netenv/server): POST /v1/messages answers 200
// with cannedReply. The session's default policy (deny) does not allow it.
const (
	deniedHost  = "198.51.100.10:8080"
	cannedReply = "CANNED-REPLY-FROM-THE-FAKE-PROVIDER"
)

// TestJobRunsConfined: a batch job runs on the node, its output lands in
// the project, and its command is held to the session's walls there: the
// user's ~/.ssh is not readable, .env reads empty, and a host the node
// itself reaches (outside the sandbox) is refused to the job, with a
// network_denied event in the job's audit log.
func TestJobRunsConfined(t *testing.T) {
	e := newEnv(t)
	curl := `curl -s --max-time 20 -X POST -H 'Content-Type: application/json' -d '{}' -w '\negress:%{http_code}\n' http://` + deniedHost + `/v1/messages`
	// The node reaches the host when no sandbox is in the way: a job
	// submitted outside stockade gets the provider's answer.
	if out, err := exec.Command("srun", "-p", "debug", "-n", "1", "sh", "-c", curl).CombinedOutput(); err != nil || !strings.Contains(string(out), cannedReply) {
		testenv.SkipOrFail(t, "the node does not reach %s outside the sandbox (as root: scripts/testnet.sh up): %v\n%s", deniedHost, err, out)
	}
	write(t, filepath.Join(e.workdir, "job.sh"), `#!/bin/sh
#SBATCH --job-name=confined
echo "marker job=$SLURM_JOB_ID sandbox=$STOCKADE_SANDBOX"
echo "env:[$(cat .env)]"
cat `+filepath.Join(e.home, ".ssh", "id_test")+` 2>&1 || echo "ssh: unreadable"
cat "$HOME/.ssh/id_test" 2>&1 || echo "ssh home: unreadable"
`+curl+`
echo "curl:$?"
`)
	r := e.run("sbatch --wait -o out-%j.txt job.sh")
	if r.code != 0 {
		t.Fatalf("sbatch --wait exited %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	m := regexp.MustCompile(`Submitted batch job (\d+)`).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("sbatch printed %q, not Submitted batch job N", r.stdout)
	}
	out, err := os.ReadFile(filepath.Join(e.workdir, "out-"+m[1]+".txt"))
	if err != nil {
		t.Fatalf("the job's output is not in the project: %v", err)
	}
	got := string(out)
	t.Logf("job output:\n%s", got)
	for _, want := range []string{"marker job=" + m[1] + " sandbox=1", "env:[]", "ssh: unreadable", "ssh home: unreadable"} {
		if !strings.Contains(got, want) {
			t.Errorf("job output lacks %q", want)
		}
	}
	for _, secret := range []string{e.sshKey, e.envValue} {
		if strings.Contains(got, secret) {
			t.Errorf("the job read a secret the sandbox hides: %q", secret)
		}
	}
	// Refused: the egress proxy's 403, or no way out at all (curl's 7,
	// connection refused); never the provider's answer.
	proxied, refused := strings.Contains(got, "egress:403\ncurl:0"), strings.Contains(got, "egress:000\ncurl:7")
	if strings.Contains(got, cannedReply) || !proxied && !refused {
		t.Errorf("the job was not refused %s, which the node reaches and the policy denies", deniedHost)
	}
	if logs := e.logs(); !strings.Contains(logs, "network denied: "+deniedHost) {
		t.Errorf("no network_denied event for %s in the audit logs:\n%s", deniedHost, logs)
	}
	// The job is the session's: sacct (stockade's, from jobcomp) shows it.
	r = e.run("sbatch --parsable --wait --wrap 'exit 3'; sacct -n -P -o JobID,State,ExitCode")
	if !regexp.MustCompile(`(?m)^\d+\|FAILED\|3:0$`).MatchString(r.stdout) {
		t.Errorf("sacct did not show the failed job with exit 3:\n%s\n%s", r.stdout, r.stderr)
	}
}

// TestRefusals: every refused flag is refused with its reason, exit 1,
// and nothing is submitted.
func TestRefusals(t *testing.T) {
	e := newEnv(t)
	write(t, filepath.Join(e.workdir, "ok.sh"), "#!/bin/sh\ntrue\n")
	write(t, filepath.Join(e.workdir, "uid.sh"), "#!/bin/sh\n#SBATCH --uid=0\ntrue\n")
	cases := []struct{ cmd, reason string }{
		{"sbatch --uid=0 ok.sh", "runs the job as another user or group"},
		{"sbatch --gid 0 ok.sh", "runs the job as another user or group"},
		{"sbatch --get-user-env ok.sh", "login environment"},
		{"srun --prolog=/bin/true true", "outside the sandbox"},
		{"srun --epilog=/bin/true true", "outside the sandbox"},
		{"srun --task-prolog=/bin/true true", "outside the sandbox"},
		{"srun --pty true", "terminal outside the sandbox"},
		{"sbatch --export=AWS_SECRET_ACCESS_KEY=x ok.sh", "not a variable the administrator allows"},
		{"sbatch --chdir=/tmp ok.sh", "is outside the project"},
		{"sbatch -o /tmp/x.out ok.sh", "is outside the project"},
		{"sbatch --error=../x.err ok.sh", "is outside the project"},
		{"sbatch --mail-user=a@b.c ok.sh", "mail"},
		{"sbatch --ui=0 ok.sh", "not on stockade's Slurm allowlist"},
		{"sbatch --container=/x ok.sh", "container"},
		{"sbatch uid.sh", "runs the job as another user or group"},
		{"salloc", "salloc opens an allocation outside the sandbox"},
		{"cd /tmp && sbatch --wrap true", "outside the project"},
		{"squeue -u root", "other users' jobs"},
		{"sacct --allusers", "other users' jobs"},
		{"scancel -u root", "name the job ids"},
		{"scontrol update JobId=1 TimeLimit=1", "administrator's command"},
		{"scontrol show config", "reveals the cluster's configuration"},
		{"sacctmgr show user", "enumerates the cluster's users and accounts"},
		{"sacctmgr show assoc", "enumerates the cluster's users and accounts"},
		{"sacctmgr add user x", "administrator's command"},
	}
	var script strings.Builder
	for i, c := range cases {
		script.WriteString("( " + c.cmd + " ) >/dev/null 2>err" + itoa(i) + "; echo \"" + itoa(i) + ":$?\"\n")
	}
	script.WriteString("squeue -h\n")
	r := e.run(script.String())
	for i, c := range cases {
		if !strings.Contains(r.stdout, itoa(i)+":1\n") {
			t.Errorf("%s: not exit 1 (stdout %q)", c.cmd, r.stdout)
		}
		msg, _ := os.ReadFile(filepath.Join(e.workdir, "err"+itoa(i)))
		if !strings.Contains(string(msg), "refused by stockade: ") || !strings.Contains(string(msg), c.reason) {
			t.Errorf("%s: said %q; want a refusal naming %q", c.cmd, msg, c.reason)
		}
		if strings.Count(strings.TrimSpace(string(msg)), "\n") != 0 {
			t.Errorf("%s: the refusal is more than one line: %q", c.cmd, msg)
		}
	}
	if strings.Contains(r.stdout, " debug ") {
		t.Errorf("a refused submission reached the queue:\n%s", r.stdout)
	}
	// Each refusal is in the session's audit log: the first 20 one line
	// each, the rest counted by the throttle (the command may refuse
	// itself in a loop).
	logs := e.logs()
	if n := strings.Count(logs, "slurm: REFUSED"); n < 20 {
		t.Errorf("the audit log has %d refusals, want 20:\n%s", n, logs)
	}
	if !strings.Contains(logs, "more slurm_refused events") {
		t.Errorf("the audit log does not count the refusals past the burst:\n%s", logs)
	}
}

// TestUserCannotWiden: the allowlist is the administrator's; a user's
// config file that sets it stops the start.
func TestUserCannotWiden(t *testing.T) {
	e := newEnv(t)
	dir := filepath.Join(e.home, ".config", "stockade")
	os.MkdirAll(dir, 0o700)
	write(t, filepath.Join(dir, "config.json"), `{"slurm": {"allow_flags": ["uid"]}}`)
	r := e.run("sbatch --uid=0 --wrap true")
	if r.code == 0 || !strings.Contains(r.stderr, `key "slurm" may be set only in /etc/stockade/config.json`) {
		t.Fatalf("a user's slurm allowlist was not refused: exit %d\n%s", r.code, r.stderr)
	}
}

// TestScope: a job submitted outside stockade is invisible and out of
// reach, even with the user scope; a job of another session is too,
// unless --slurm-scope project. squeue and sacct list what is in scope
// and nothing else; each list is read on its own, never out of the
// whole output (a refusal names the job it refuses).
func TestScope(t *testing.T) {
	e := newEnv(t)
	foreign := e.outside("sbatch", "--parsable", "--hold", "--wrap", "true", "-o", "/dev/null")
	defer e.outside("scancel", foreign)
	lists := `echo "squeue{"; squeue -h -o %i; echo "}squeue"; echo "sacct{"; sacct -n -P -o JobID; echo "}sacct"` + "\n"
	r := e.run(lists+`scancel `+foreign+` 2>&1; echo "cancel:$?"`, "--slurm-scope", "user")
	for _, list := range []string{"squeue", "sacct"} {
		if ids := section(t, r, list); slices.Contains(ids, foreign) {
			t.Errorf("user scope: %s lists the job %s submitted outside stockade: %q", list, foreign, ids)
		}
	}
	if !strings.Contains(r.stdout, "cancel:1") {
		t.Errorf("user scope cancels the job %s submitted outside stockade:\n%s", foreign, r.stdout)
	}
	r = e.run("sbatch --parsable --hold --wrap true")
	own := strings.TrimSpace(r.stdout)
	if r.code != 0 || own == "" {
		t.Fatalf("sbatch --hold: exit %d %q %s", r.code, r.stdout, r.stderr)
	}
	defer e.outside("scancel", own)
	script := lists + `scontrol show job ` + foreign + ` >/dev/null 2>&1; echo "show:$?"
scancel ` + foreign + ` 2>&1; echo "cancel:$?"
scontrol release ` + foreign + ` 2>&1; echo "release:$?"`
	// Another session of the same project: the first one's job is not its own.
	r = e.run(script)
	for _, list := range []string{"squeue", "sacct"} {
		ids := section(t, r, list)
		if slices.Contains(ids, foreign) {
			t.Errorf("session scope: %s lists the foreign job %s: %q", list, foreign, ids)
		}
		if slices.Contains(ids, own) {
			t.Errorf("session scope: %s lists another session's job %s: %q", list, own, ids)
		}
	}
	for _, want := range []string{"show:1", "cancel:1", "release:1", "refused by stockade: job " + foreign + " was not submitted through stockade"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("foreign job: output lacks %q:\n%s", want, r.stdout)
		}
	}
	// Project and user scope: the other session's job is in reach, the
	// foreign one still not.
	for _, scope := range []string{"user", "project"} {
		r = e.run(lists+`scancel `+foreign+` 2>/dev/null; echo "cancel foreign:$?"`, "--slurm-scope", scope)
		for _, list := range []string{"squeue", "sacct"} {
			ids := section(t, r, list)
			if !slices.Contains(ids, own) || slices.Contains(ids, foreign) {
				t.Errorf("%s scope: %s lists %q; want %s and not %s", scope, list, ids, own, foreign)
			}
		}
		if !strings.Contains(r.stdout, "cancel foreign:1") {
			t.Errorf("%s scope cancels the foreign job %s:\n%s\n%s", scope, foreign, r.stdout, r.stderr)
		}
	}
	r = e.run(`scancel `+own+`; echo "cancel own:$?"`, "--slurm-scope", "project")
	if !strings.Contains(r.stdout, "cancel own:0") {
		t.Errorf("project scope: want job %s cancelled:\n%s\n%s", own, r.stdout, r.stderr)
	}
	// A dependency may name the session's own job, not a foreign one.
	r = e.run(`j=$(sbatch --parsable --hold --wrap true); k=$(sbatch --parsable -H -d afterok:$j --wrap true); echo "own dep:$?"; scancel $j $k
sbatch -d afterok:`+foreign+` --wrap true 2>&1; echo "foreign dep:$?"`, "--slurm-scope", "session")
	if !strings.Contains(r.stdout, "own dep:0") || !strings.Contains(r.stdout, "foreign dep:1") || !strings.Contains(r.stdout, "job "+foreign+" was not submitted") {
		t.Errorf("dependencies: want own allowed, foreign refused:\n%s\n%s", r.stdout, r.stderr)
	}
	if state := e.outside("squeue", "-h", "-j", foreign, "-o", "%t"); state != "PD" {
		t.Errorf("the foreign job %s is %q, not still pending", foreign, state)
	}
	if logs := e.logs(); !strings.Contains(logs, "slurm: cancelled ("+own+"): scancel "+own) {
		t.Errorf("the cancel is not in the audit log:\n%s", logs)
	}
}

// section is the list a script printed between "NAME{" and "}NAME", one
// word a line; it fails t when the script did not print it whole.
func section(t *testing.T, r result, name string) []string {
	t.Helper()
	_, after, ok := strings.Cut(r.stdout, name+"{\n")
	body, _, ok2 := strings.Cut(after, "}"+name+"\n")
	if !ok || !ok2 {
		t.Fatalf("the output has no %s list:\n%s\n%s", name, r.stdout, r.stderr)
	}
	return strings.Fields(body)
}

// TestMalformed: the chaperon answers garbage with an error and keeps
// serving; arguments with quotes, $(), newlines reach Slurm as data, and
// a NUL byte is refused.
func TestMalformed(t *testing.T) {
	e := newEnv(t)
	pwned := filepath.Join(e.workdir, "pwned")
	client := `
import socket, struct, json, sys
def send(raw, read=True):
    s = socket.create_connection(("127.0.0.1", 6820))
    s.sendall(raw)
    s.shutdown(socket.SHUT_WR)
    data = b""
    while True:
        b = s.recv(65536)
        if not b: break
        data += b
    s.close()
    return data
def frame(obj):
    d = json.dumps(obj).encode()
    return struct.pack(">I", len(d)) + d
for raw in [b"", b"\x00\x00", struct.pack(">I", 0xffffffff), struct.pack(">I", 5) + b"nope!", frame([1, 2]),
            frame({"command": "sbatch\x00", "args": [], "cwd": "/"}), frame({"command": "../../bin/sh", "args": ["-c", "id"]})]:
    rep = send(raw)
    print("garbage:", len(rep) > 4 and json.loads(rep[4:]).get("code"))
rep = json.loads(send(frame({"command": "sbatch", "args": ["--wrap", "true", "-J", "a\x00b"], "cwd": sys.argv[1]}))[4:])
print("nul:", rep["code"], bytes(__import__("base64").b64decode(rep.get("stderr", ""))).decode().strip())
`
	write(t, filepath.Join(e.workdir, "client.py"), client)
	name := `x'"$(touch ` + pwned + `)` + "\n" + "`touch " + pwned + "`;touch " + pwned
	write(t, filepath.Join(e.workdir, "name"), name)
	r := e.run(`python3 client.py "$PWD"; sbatch --parsable --wait -o /dev/null -J "$(cat name)" --wrap true; echo "sbatch:$?"; sinfo -h -p debug -o %a`)
	t.Logf("%s\n%s", r.stdout, r.stderr)
	if got := strings.Count(r.stdout, "garbage: 1"); got != 7 {
		t.Errorf("want 7 garbage requests answered with an error, got %d:\n%s", got, r.stdout)
	}
	if !strings.Contains(r.stdout, "nul: 1") || !strings.Contains(r.stdout, "NUL byte") {
		t.Errorf("a NUL byte in an argument was not refused:\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, "sbatch:0") || !strings.Contains(r.stdout, "up") {
		t.Errorf("the chaperon stopped answering after the garbage:\n%s\n%s", r.stdout, r.stderr)
	}
	if _, err := os.Lstat(pwned); err == nil {
		t.Errorf("a job name ran as a shell command: %s exists", pwned)
	}
}

func itoa(i int) string { return strings.TrimSpace(strings.Repeat(" ", 0) + fmtInt(i)) }

func fmtInt(i int) string {
	if i < 10 {
		return string(rune('0' + i))
	}
	return fmtInt(i/10) + string(rune('0'+i%10))
}

// logs is the audit log of every session of this environment.
func (e *env) logs() string {
	dir := filepath.Join(e.home, ".local", "state", "stockade", "audit")
	entries, _ := os.ReadDir(dir)
	var b strings.Builder
	for _, en := range entries {
		if !strings.HasSuffix(en.Name(), ".jsonl") {
			continue
		}
		id := strings.TrimSuffix(en.Name(), ".jsonl")
		b.WriteString(e.outside(bin, "logs", "-s", id))
	}
	return b.String()
}

// TestSrun: srun runs each task under stockade run on the node, returns
// the tasks' output and exit status, and opens -o in the project inside.
func TestSrun(t *testing.T) {
	e := newEnv(t)
	r := e.run(`srun -n 2 -l sh -c 'echo "sandbox=$STOCKADE_SANDBOX env:[$(cat .env)]"'; echo "rc=$?"
srun -o srun-%t.txt -n 1 echo to-file; echo "rc=$?"
srun false; echo "false=$?"
echo "sacct:$(sacct -n -P -o JobID | wc -l)"`)
	t.Logf("%s\n%s", r.stdout, r.stderr)
	for _, want := range []string{"0: sandbox=1 env:[]", "1: sandbox=1 env:[]", "rc=0\nrc=0\nfalse=1"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("srun: output lacks %q", want)
		}
	}
	if strings.Contains(r.stdout, e.envValue) {
		t.Error("an srun task read the masked .env")
	}
	if !strings.Contains(r.stdout, "sacct:3\n") {
		t.Error("sacct does not list the session's three srun jobs")
	}
	if got, err := os.ReadFile(filepath.Join(e.workdir, "srun-0.txt")); err != nil || string(got) != "to-file\n" {
		t.Errorf("srun -o: %q %v, want to-file in the project", got, err)
	}
}

// TestSrunRunning: a running srun job is the session's at once: squeue
// lists it and scontrol shows it while it runs, and scancel ends it.
func TestSrunRunning(t *testing.T) {
	e := newEnv(t)
	r := e.run(`srun sleep 120 &
pid=$!
id=
i=0
while [ -z "$id" ] && [ $i -lt 150 ]; do id=$(squeue -h -o %i); i=$((i + 1)); sleep 0.2; done
echo "squeue:$id"
scontrol show job "$id" | grep -o 'JobState=[A-Z]*'
scancel "$id"; echo "cancel:$?"
wait $pid; echo "srun:$?"`)
	t.Logf("%s\n%s", r.stdout, r.stderr)
	m := regexp.MustCompile(`squeue:(\d+)\n`).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("squeue does not list the running srun job:\n%s\n%s", r.stdout, r.stderr)
	}
	defer exec.Command("scancel", m[1]).Run()
	for _, want := range []string{"JobState=RUNNING", "cancel:0"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("the running srun job %s: output lacks %q", m[1], want)
		}
	}
	if strings.Contains(r.stdout, "srun:0") {
		t.Errorf("srun of the cancelled job %s exited 0", m[1])
	}
	// Gone from the queue (an ended job's id is invalid to squeue).
	if q, _ := exec.Command("squeue", "-h", "-j", m[1], "-o", "%t").Output(); strings.TrimSpace(string(q)) == "R" {
		t.Errorf("the cancelled srun job %s is still running", m[1])
	}
}

// TestSrunPending: an srun job that waits in the queue (--begin later)
// is the session's already: squeue lists it pending, and scancel ends it
// and the srun.
func TestSrunPending(t *testing.T) {
	e := newEnv(t)
	r := e.run(`srun --begin=now+600 true &
pid=$!
line=
i=0
while [ -z "$line" ] && [ $i -lt 150 ]; do line=$(squeue -h -o '%i %t'); i=$((i + 1)); sleep 0.2; done
echo "squeue:$line"
scancel "${line%% *}"; echo "cancel:$?"
wait $pid; echo "srun:$?"`)
	t.Logf("%s\n%s", r.stdout, r.stderr)
	m := regexp.MustCompile(`squeue:(\d+) PD\n`).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("squeue does not list the pending srun job:\n%s\n%s", r.stdout, r.stderr)
	}
	defer exec.Command("scancel", m[1]).Run()
	if !strings.Contains(r.stdout, "cancel:0") || strings.Contains(r.stdout, "srun:0") {
		t.Errorf("scancel of the pending srun job %s: want it cancelled and srun failed:\n%s", m[1], r.stdout)
	}
}

// TestSrunShimKilled: killing srun inside (the shim) ends its job, as
// killing the real srun does.
func TestSrunShimKilled(t *testing.T) {
	e := newEnv(t)
	r := e.run(`srun sleep 120 &
pid=$!
id=
i=0
while [ -z "$id" ] && [ $i -lt 150 ]; do id=$(squeue -h -t R -o %i); i=$((i + 1)); sleep 0.2; done
echo "running:$id"
kill $pid; wait $pid
i=0
while [ -n "$(squeue -h -o %i)" ] && [ $i -lt 300 ]; do i=$((i + 1)); sleep 0.2; done
echo "left:[$(squeue -h -o %i)]"`)
	t.Logf("%s\n%s", r.stdout, r.stderr)
	m := regexp.MustCompile(`running:(\d+)\n`).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("squeue does not list the running srun job:\n%s\n%s", r.stdout, r.stderr)
	}
	defer exec.Command("scancel", m[1]).Run()
	if !strings.Contains(r.stdout, "left:[]\n") {
		t.Errorf("the job %s of a killed srun is still in the queue:\n%s", m[1], r.stdout)
	}
}

// TestSrunStreams: srun's output reaches the shim as the step writes it:
// the first line is in the file srun's output goes to while the step
// still runs.
func TestSrunStreams(t *testing.T) {
	e := newEnv(t)
	r := e.run(`srun sh -c 'echo first; i=0; while [ ! -e stop ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done; echo second' > out.txt &
pid=$!
i=0
while ! grep -q first out.txt && [ $i -lt 300 ]; do i=$((i + 1)); sleep 0.1; done
echo "while running:[$(cat out.txt)]"
touch stop
wait $pid; echo "srun:$?"
echo "after:[$(cat out.txt)]"`)
	t.Logf("%s\n%s", r.stdout, r.stderr)
	for _, want := range []string{"while running:[first]\n", "srun:0\n", "after:[first\nsecond]\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("srun's output: lacks %q", want)
		}
	}
}

// TestOtherUsersJob: another user's job never appears and cannot be
// cancelled, whatever the scope, while a job of the session's own does
// appear. Submitting as another user takes root; the unprivileged pass
// has the same-user foreign job of TestScope.
func TestOtherUsersJob(t *testing.T) {
	e := newEnv(t)
	if os.Getuid() != 0 {
		t.Skip("submitting a job as another user needs root; TestScope covers a foreign job of this user")
	}
	cmd := exec.Command("setpriv", "--reuid=stockade-test", "--regid=stockade-test", "--init-groups",
		"sbatch", "--parsable", "--hold", "--wrap", "true", "-o", "/dev/null")
	cmd.Dir = "/tmp"
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("sbatch as stockade-test: %v\n%s", err, out)
	}
	other := strings.TrimSpace(string(out))
	defer exec.Command("scancel", other).Run()
	for _, scope := range []string{"session", "project", "user"} {
		r := e.run(`own=$(sbatch --parsable --hold --wrap true -o /dev/null); echo "own:$own"
echo "squeue{"; squeue -h -o %i; echo "}squeue"; echo "sacct{"; sacct -n -P -o JobID; echo "}sacct"
scontrol show job `+other+` 2>/dev/null; echo "show:$?"; scancel `+other+` 2>/dev/null; echo "cancel:$?"; scancel "$own"`, "--slurm-scope", scope)
		m := regexp.MustCompile(`own:(\d+)\n`).FindStringSubmatch(r.stdout)
		if m == nil {
			t.Fatalf("scope %s: sbatch printed no job id:\n%s\n%s", scope, r.stdout, r.stderr)
		}
		for _, list := range []string{"squeue", "sacct"} {
			ids := section(t, r, list)
			if slices.Contains(ids, other) || !slices.Contains(ids, m[1]) {
				t.Errorf("scope %s: %s lists %q; want the session's job %s and not stockade-test's %s", scope, list, ids, m[1], other)
			}
		}
		if !strings.Contains(r.stdout, "show:1") || !strings.Contains(r.stdout, "cancel:1") {
			t.Errorf("scope %s reaches stockade-test's job %s:\n%s", scope, other, r.stdout)
		}
	}
}

// TestWaitInScope: a job submitted with sbatch --wait is the session's as
// soon as it is submitted: squeue shows it and scancel ends it while the
// first sbatch still waits.
func TestWaitInScope(t *testing.T) {
	e := newEnv(t)
	r := e.run(`sbatch --wait -o /dev/null --wrap 'sleep 300' >wait.txt 2>/dev/null &
pid=$!
i=0
until id=$(squeue -h -o %i) && [ -n "$id" ]; do i=$((i + 1)); [ $i -gt 600 ] && break; done
echo "seen:$id"
i=0
until [ -s wait.txt ] || [ $i -gt 100 ]; do i=$((i + 1)); sleep 0.1; done
echo "printed:$(cat wait.txt)"
scancel "$id"; echo "cancel:$?"
wait $pid`)
	t.Logf("%s\n%s", r.stdout, r.stderr)
	m := regexp.MustCompile(`seen:(\d+)\n`).FindStringSubmatch(r.stdout)
	if m == nil || !strings.Contains(r.stdout, "cancel:0") {
		t.Fatalf("a waiting sbatch's job was not in scope, or not cancelled:\n%s", r.stdout)
	}
	if !strings.Contains(r.stdout, "printed:Submitted batch job "+m[1]+"\n") {
		t.Errorf("sbatch --wait did not print its job's line while the job ran:\n%s", r.stdout)
	}
	if state := e.outside("squeue", "-h", "-t", "all", "-j", m[1], "-o", "%T"); state != "CANCELLED" {
		t.Errorf("job %s is %q after scancel, not CANCELLED", m[1], state)
	}
	// An empty scope is an empty queue, not an error.
	if r := e.run("squeue"); r.code != 0 || strings.Contains(r.stderr, "Invalid job id") || !strings.Contains(r.stdout, "JOBID") {
		t.Errorf("squeue with nothing in scope: exit %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
}

// TestStep: srun inside a batch job starts a step of that job, its output
// lands in the project, and its command is held to the session's walls
// (no ~/.ssh, .env masked); a step of another job, a new allocation's
// flags, and every other Slurm command are refused inside the job, each
// with its reason.
func TestStep(t *testing.T) {
	e := newEnv(t)
	other := e.outside("sbatch", "--parsable", "-H", "-p", "debug", "--wrap", "true")
	t.Cleanup(func() { exec.Command("scancel", other).Run() })
	key := filepath.Join(e.home, ".ssh", "id_test")
	refused := []struct{ cmd, reason string }{
		{"srun --jobid=" + other + " true", "never of another"},
		{"srun --jobid $SLURM_JOB_ID true", "never of another"},
		{"srun -p debug true", "sets a property of an allocation"},
		{"srun --qos=normal true", "sets a property of an allocation"},
		{"srun --uid=0 true", "runs the job as another user"},
		{"srun --pty true", "terminal outside the sandbox"},
		{"srun --x11 true", "forwards the display"},
		{"srun --task-prolog=/bin/true true", "outside the sandbox"},
		{"srun -o /tmp/x true", "is outside the project"},
		{"sbatch --wrap true", "only srun, for a step of this job"},
		{"salloc", "only srun, for a step of this job"},
		{"scancel " + other, "only srun, for a step of this job"},
	}
	var b strings.Builder
	b.WriteString("#!/bin/sh\n")
	b.WriteString("srun -n 1 hostname; echo \"hostname:$?\"\n")
	b.WriteString("srun -n 1 sh -c 'echo \"step=$SLURM_JOB_ID.$SLURM_STEP_ID sandbox=$STOCKADE_SANDBOX\"'\n")
	b.WriteString("srun -n 1 -o step-%j.txt sh -c 'echo in-step'; echo \"step-o:$?\"\n")
	// The sandbox's SLURM_JOB_ID does not steer the step: the chaperon's is slurmd's.
	b.WriteString("SLURM_JOB_ID=" + other + " srun -n 1 sh -c 'echo \"steered=$SLURM_JOB_ID\"'\n")
	b.WriteString("srun -n 1 sh -c 'echo \"env:[$(cat .env)]\"; cat " + key + " 2>/dev/null || echo \"ssh: unreadable\"'\n")
	for i, c := range refused {
		b.WriteString("( " + c.cmd + " ) >/dev/null 2>err" + itoa(i) + "; echo \"r" + itoa(i) + ":$?\"\n")
	}
	write(t, filepath.Join(e.workdir, "steps.sh"), b.String())
	r := e.run("sbatch --wait -o out-%j.txt steps.sh")
	m := regexp.MustCompile(`Submitted batch job (\d+)`).FindStringSubmatch(r.stdout)
	if r.code != 0 || m == nil {
		t.Fatalf("sbatch --wait exited %d\nstdout: %s\nstderr: %s", r.code, r.stdout, r.stderr)
	}
	out, err := os.ReadFile(filepath.Join(e.workdir, "out-"+m[1]+".txt"))
	if err != nil {
		t.Fatalf("the job's output is not in the project: %v", err)
	}
	got := string(out)
	t.Logf("job output:\n%s", got)
	for _, want := range []string{"hostname:0", "step=" + m[1] + ".", " sandbox=1", "step-o:0", "env:[]", "ssh: unreadable"} {
		if !strings.Contains(got, want) {
			t.Errorf("job output lacks %q", want)
		}
	}
	if !strings.Contains(got, "steered="+m[1]+"\n") {
		t.Errorf("a step with SLURM_JOB_ID=%s set in the sandbox did not run in job %s", other, m[1])
	}
	if !regexp.MustCompile(`step=` + m[1] + `\.\d+ sandbox=1`).MatchString(got) {
		t.Errorf("the step is not a step of job %s in a sandbox", m[1])
	}
	for _, secret := range []string{e.sshKey, e.envValue} {
		if strings.Contains(got, secret) {
			t.Errorf("a step read a secret the sandbox hides: %q", secret)
		}
	}
	if step, err := os.ReadFile(filepath.Join(e.workdir, "step-"+m[1]+".txt")); err != nil || string(step) != "in-step\n" {
		t.Errorf("the step's -o output in the project: %q, %v", step, err)
	}
	for i, c := range refused {
		if !strings.Contains(got, "r"+itoa(i)+":1\n") {
			t.Errorf("%s inside the job: not exit 1", c.cmd)
		}
		msg, _ := os.ReadFile(filepath.Join(e.workdir, "err"+itoa(i)))
		if !strings.Contains(string(msg), "refused by stockade: ") || !strings.Contains(string(msg), c.reason) {
			t.Errorf("%s inside the job: said %q; want a refusal naming %q", c.cmd, msg, c.reason)
		}
	}
	// The job's own stockade run on the node logged the steps and the
	// refusals (its audit log is in the user's state directory there).
	logs := e.logs()
	for _, want := range []string{"slurm: submitted a step of job " + m[1] + ": srun -n 1 hostname", "slurm: REFUSED: srun --jobid=" + other + " true: "} {
		if !strings.Contains(logs, want) {
			t.Errorf("the audit logs lack %q:\n%s", want, logs)
		}
	}
	// The other job is untouched: still held, no step of it ran.
	if st := e.outside("squeue", "-h", "-j", other, "-o", "%T"); st != "PENDING" {
		t.Errorf("the other job %s is %q, want PENDING (held)", other, st)
	}
}

// TestStateWritable: the chaperon's directory, where each job's wrapper
// waits to run on the node outside any sandbox, must not be one the
// sandbox can write. XDG_STATE_HOME in the project, or a --rw tree that
// holds it, refuses --slurm with one line and exit 2, and nothing is
// made: no state directory, no sandbox HOME, nothing submitted.
func TestStateWritable(t *testing.T) {
	e := newEnv(t)
	inProject := filepath.Join(e.workdir, ".state")
	for _, c := range []struct {
		name  string
		vars  []string
		flags []string
		state string
	}{
		{"XDG_STATE_HOME in the project", []string{"XDG_STATE_HOME=" + inProject}, nil, inProject},
		{"--rw holding it", nil, []string{"--rw", filepath.Join(e.home, ".local")}, filepath.Join(e.home, ".local", "state")},
	} {
		saved := e.vars
		e.vars = append(slices.Clone(e.vars), c.vars...)
		os.MkdirAll(filepath.Join(e.home, ".local"), 0o700)
		r := e.run("sbatch --parsable --hold --wrap true; echo ran", c.flags...)
		e.vars = saved
		msg := strings.TrimSpace(r.stderr)
		if r.code != 2 || strings.Contains(r.stdout, "ran") || strings.Contains(msg, "\n") ||
			!strings.Contains(msg, "--slurm: the chaperon's directory "+filepath.Join(c.state, "stockade", "slurm")) {
			t.Errorf("%s: exit %d\nstdout: %s\nstderr: %s\nwant exit 2 and one line naming the chaperon's directory", c.name, r.code, r.stdout, r.stderr)
		}
		for _, p := range []string{c.state, filepath.Join(e.home, ".local", "share", "stockade")} {
			if _, err := os.Lstat(p); err == nil {
				t.Errorf("%s: the refused start made %s", c.name, p)
			}
		}
	}
}
