package slurm

import (
	"bytes"
	"io"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeSrun is a real srun for the tests: it does what the job's wrapper
// does on the node (writes ID into the job directory, its --chdir), then
// waits for the file RELEASE before it prints and ends.
const fakeSrun = `#!/bin/sh
for a; do case $a in --chdir=*) dir=${a#--chdir=};; esac; done
printf '%s\n' "$ID" > "$dir/slurm-job-id"
while [ ! -e "$RELEASE" ]; do sleep 0.05; done
echo done
`

// TestSrunRegisteredWhileRunning: an srun job is in the registry (so in
// the queries' and scancel's scope) as soon as its wrapper writes its id
// on the node, long before srun ends; its submit event names it once.
func TestSrunRegisteredWhileRunning(t *testing.T) {
	c, events := newChaperon(t, Admin{})
	bin := t.TempDir()
	noQueue(t, bin)
	if err := os.WriteFile(filepath.Join(bin, "srun"), []byte(fakeSrun), 0o755); err != nil {
		t.Fatal(err)
	}
	release := filepath.Join(bin, "release")
	c.cfg.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "ID=4242", "RELEASE=" + release}
	done := make(chan Reply)
	go func() { done <- c.Answer(Request{Command: "srun", Args: []string{"sleep", "100"}, Cwd: c.cfg.Workdir}) }()
	deadline := time.Now().Add(20 * time.Second)
	for !slices.Contains(c.scoped(), "4242") {
		select {
		case rep := <-done:
			t.Fatalf("srun ended (exit %d %q %q) before its job entered the registry", rep.Code, rep.Stdout, rep.Stderr)
		default:
		}
		if time.Now().After(deadline) {
			t.Fatal("the running srun's job is not in the registry")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := os.WriteFile(release, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	rep := <-done
	if rep.Code != 0 || string(rep.Stdout) != "done\n" {
		t.Fatalf("srun: exit %d %q %q", rep.Code, rep.Stdout, rep.Stderr)
	}
	if n := strings.Count(strings.Join(c.scoped(), " "), "4242"); n != 1 {
		t.Errorf("the registry holds job 4242 %d times", n)
	}
	if len(*events) != 1 || (*events)[0] != EventSubmit+": " {
		t.Errorf("events %q, want one %s", *events, EventSubmit)
	}
}

// TestSrunJobIDFile: only a whole plain id in the job directory's file
// is taken; a symlink there is not followed.
func TestSrunJobIDFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, jobIDFile)
	for _, tc := range []struct{ data, want string }{
		{"", ""}, {"12", ""}, {"12\n", "12"}, {"12 13\n", ""}, {"-1\n", ""}, {"x\n", ""}, {strings.Repeat("1", 100) + "\n", ""},
	} {
		os.WriteFile(p, []byte(tc.data), 0o600)
		if got := readJobID(dir); got != tc.want {
			t.Errorf("readJobID(%q) = %q, want %q", tc.data, got, tc.want)
		}
	}
	os.Remove(p)
	other := filepath.Join(t.TempDir(), "id")
	os.WriteFile(other, []byte("77\n"), 0o600)
	os.Symlink(other, p)
	if got := readJobID(dir); got != "" {
		t.Errorf("readJobID followed a symlink: %q", got)
	}
}

// lineSignal is a writer that closes first when a whole line arrived.
type lineSignal struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	first chan struct{}
}

func (l *lineSignal) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	had := bytes.IndexByte(l.buf.Bytes(), '\n') >= 0
	l.buf.Write(p)
	if !had && bytes.IndexByte(l.buf.Bytes(), '\n') >= 0 {
		close(l.first)
	}
	return len(p), nil
}

func (l *lineSignal) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}

// TestSrunStreams: a running srun's output reaches the shim as it is
// written, the first line long before the step ends, stdout and stderr
// apart and byte for byte (data, not text); then its exit status.
func TestSrunStreams(t *testing.T) {
	c, _ := newChaperon(t, Admin{})
	bin := t.TempDir()
	release := filepath.Join(bin, "release")
	script := `#!/bin/sh
printf 'first \001$(id)\n'
printf 'warn\n' >&2
while [ ! -e "$RELEASE" ]; do sleep 0.05; done
printf 'second\n'
exit 3
`
	noQueue(t, bin)
	if err := os.WriteFile(filepath.Join(bin, "srun"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	c.cfg.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "RELEASE=" + release}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go c.Serve(ln)
	stdout := &lineSignal{first: make(chan struct{})}
	var stderr bytes.Buffer
	type result struct {
		code int
		err  error
	}
	done := make(chan result, 1)
	go func() {
		code, err := Stream(ln.Addr().String(), Request{Command: "srun", Args: []string{"true"}, Cwd: c.cfg.Workdir}, stdout, &stderr)
		done <- result{code, err}
	}()
	select {
	case <-stdout.first:
	case r := <-done:
		t.Fatalf("srun ended (%d, %v) before its first line reached the shim", r.code, r.err)
	case <-time.After(20 * time.Second):
		t.Fatal("the first line of a running srun did not reach the shim")
	}
	if got := stdout.String(); got != "first \x01$(id)\n" {
		t.Errorf("the first line reached the shim as %q", got)
	}
	os.WriteFile(release, nil, 0o600)
	r := <-done
	if r.err != nil || r.code != 3 {
		t.Fatalf("srun: exit %d, %v; want 3", r.code, r.err)
	}
	if got := stdout.String(); got != "first \x01$(id)\nsecond\n" {
		t.Errorf("srun's stdout reached the shim as %q", got)
	}
	if stderr.String() != "warn\n" {
		t.Errorf("srun's stderr reached the shim as %q", stderr.String())
	}
	// Without a stream (Answer), the output is in the one reply.
	os.Remove(release)
	go func() { time.Sleep(100 * time.Millisecond); os.WriteFile(release, nil, 0o600) }()
	if rep := c.Answer(Request{Command: "srun", Args: []string{"true"}, Cwd: c.cfg.Workdir}); rep.Code != 3 || !strings.HasSuffix(string(rep.Stdout), "second\n") || rep.More {
		t.Errorf("Answer: %+v", rep)
	}
}

// TestSrunStreamBounded: a shim that does not read holds srun back (its
// pipe full) rather than the chaperon buffering its output, and Close
// still ends the connection and the srun.
func TestSrunStreamBounded(t *testing.T) {
	c, _ := newChaperon(t, Admin{})
	bin := t.TempDir()
	finished := filepath.Join(bin, "finished")
	script := "#!/bin/sh\nhead -c 67108864 /dev/zero\ntouch \"$FINISHED\"\n"
	noQueue(t, bin)
	if err := os.WriteFile(filepath.Join(bin, "srun"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	c.cfg.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "FINISHED=" + finished}
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
	if err := writeFrame(conn, Request{Command: "srun", Args: []string{"true"}, Cwd: c.cfg.Workdir}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second)
	if _, err := os.Stat(finished); err == nil {
		t.Error("srun wrote 64 MiB to a shim that reads nothing: the chaperon buffered it")
	}
	done := make(chan struct{})
	go func() { c.Close(); close(done) }()
	select {
	case <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("Close did not end a streaming srun whose shim reads nothing")
	}
}

// TestSrunRegisteredWhilePending: an srun job still waiting in the queue
// is in the registry once the queue shows a pending job of the user's
// whose working directory is its job directory, and only that one.
func TestSrunRegisteredWhilePending(t *testing.T) {
	c, events := newChaperon(t, Admin{})
	bin := t.TempDir()
	release := filepath.Join(bin, "release")
	srun := `#!/bin/sh
for a; do case $a in --chdir=*) printf '%s' "${a#--chdir=}" > "$BIN/dir";; esac; done
while [ ! -e "$RELEASE" ]; do sleep 0.05; done
`
	squeue := `#!/bin/sh
[ "$*" = "--me --noheader --states=PENDING --format=%i|%Z" ] || exit 1
dir=$(cat "$BIN/dir")
printf '1|/elsewhere\n12_[1-2]|%s\n13|%s/x\n14|%s\n' "$dir" "$dir" "$dir"
`
	for name, script := range map[string]string{"srun": srun, "squeue": squeue} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	c.cfg.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "BIN=" + bin, "RELEASE=" + release}
	done := make(chan Reply)
	go func() { done <- c.Answer(Request{Command: "srun", Args: []string{"true"}, Cwd: c.cfg.Workdir}) }()
	deadline := time.Now().Add(20 * time.Second)
	for !slices.Contains(c.scoped(), "14") {
		if time.Now().After(deadline) {
			t.Fatalf("the pending srun's job is not in the registry: %q", c.scoped())
		}
		time.Sleep(50 * time.Millisecond)
	}
	os.WriteFile(release, nil, 0o600)
	<-done
	if got := c.scoped(); !slices.Equal(got, []string{"14"}) {
		t.Errorf("the registry holds %q, want only 14", got)
	}
	if len(*events) != 1 {
		t.Errorf("events %q, want one", *events)
	}
}

// noQueue puts in bin an squeue that knows no job, so that a test's srun
// never asks the real one.
func noQueue(t *testing.T, bin string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(bin, "squeue"), []byte("#!/bin/sh\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}

// TestSbatchWaitStreams: sbatch --wait's job line reaches the shim when
// the job is submitted, as the real one prints it, not when it ends.
func TestSbatchWaitStreams(t *testing.T) {
	for _, parsable := range []bool{false, true} {
		c, _ := newChaperon(t, Admin{})
		bin := t.TempDir()
		release := filepath.Join(bin, "release")
		if err := os.WriteFile(filepath.Join(bin, "sbatch"), []byte("#!/bin/sh\necho '77;cl'\nwhile [ ! -e \"$RELEASE\" ]; do sleep 0.05; done\nexit 4\n"), 0o755); err != nil {
			t.Fatal(err)
		}
		c.cfg.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "RELEASE=" + release}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		go c.Serve(ln)
		args := []string{"--wait", "--wrap", "true"}
		want := "Submitted batch job 77\n"
		if parsable {
			args, want = append(args, "--parsable"), "77;cl\n"
		}
		stdout := &lineSignal{first: make(chan struct{})}
		done := make(chan int, 1)
		go func() {
			code, _ := Stream(ln.Addr().String(), Request{Command: "sbatch", Args: args, Cwd: c.cfg.Workdir}, stdout, io.Discard)
			done <- code
		}()
		select {
		case <-stdout.first:
		case <-time.After(20 * time.Second):
			t.Fatalf("parsable %v: sbatch --wait's job line did not reach the shim while the job ran", parsable)
		}
		if !slices.Contains(c.scoped(), "77") {
			t.Errorf("parsable %v: the job is not in the registry", parsable)
		}
		os.WriteFile(release, nil, 0o600)
		if code := <-done; code != 4 || stdout.String() != want {
			t.Errorf("parsable %v: exit %d, stdout %q; want 4 and %q", parsable, code, stdout.String(), want)
		}
	}
}

// TestSrunShimHangsUp: when the shim hangs up (killed, Ctrl-C), the srun
// it started gets SIGTERM, on which the real srun ends its job.
func TestSrunShimHangsUp(t *testing.T) {
	c, _ := newChaperon(t, Admin{})
	bin := t.TempDir()
	term := filepath.Join(bin, "term")
	noQueue(t, bin)
	script := "#!/bin/sh\ntrap 'touch \"$TERM_FILE\"; exit 143' TERM\necho started\nwhile :; do sleep 0.05; done\n"
	if err := os.WriteFile(filepath.Join(bin, "srun"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	c.cfg.Env = []string{"PATH=" + bin + ":/usr/bin:/bin", "TERM_FILE=" + term}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go c.Serve(ln)
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	if err := writeFrame(conn, Request{Command: "srun", Args: []string{"true"}, Cwd: c.cfg.Workdir}); err != nil {
		t.Fatal(err)
	}
	var rep Reply
	if err := readFrame(conn, &rep, MaxFrame); err != nil || string(rep.Stdout) != "started\n" || !rep.More {
		t.Fatalf("first frame %+v, %v; want started", rep, err)
	}
	conn.Close()
	deadline := time.Now().Add(20 * time.Second)
	for {
		if _, err := os.Stat(term); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("srun got no SIGTERM when its shim hung up")
		}
		time.Sleep(50 * time.Millisecond)
	}
}
