package console

import (
	"bufio"
	"io"
	"os"
	"strings"
	"testing"

	"github.com/creack/pty"
	"golang.org/x/sys/unix"

	"github.com/stockade-dev/stockade/internal/termfilter"
)

// TestPassThrough: without a terminal, the command gets the user's own
// pipes, untouched.
func TestPassThrough(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	c, err := Open(r, w, w, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.TTY || c.Stdin != r || c.Stdout != w || c.Stderr != w {
		t.Errorf("Open(pipes) = tty %v, %v %v %v; want the pipes themselves", c.TTY, c.Stdin, c.Stdout, c.Stderr)
	}
}

// TestRelayHostFiles: a file, a device or a directory of the host's is
// never handed in: files and /dev/null are relayed through pipes (the
// command's fchmod reached the host's /dev/null, and a directory's openat
// reached past the masks), and a directory is refused.
func TestRelayHostFiles(t *testing.T) {
	dir := t.TempDir()
	in := dir + "/in"
	if err := os.WriteFile(in, []byte("input\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	inF, err := os.Open(in)
	if err != nil {
		t.Fatal(err)
	}
	defer inF.Close()
	outF, err := os.Create(dir + "/out")
	if err != nil {
		t.Fatal(err)
	}
	defer outF.Close()
	null, err := os.OpenFile(os.DevNull, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer null.Close()
	c, err := Open(inF, outF, null, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []*os.File{c.Stdin, c.Stdout, c.Stderr} {
		fi, err := f.Stat()
		if err != nil || fi.Mode()&os.ModeNamedPipe == 0 {
			t.Errorf("%s handed in as %v (%v), want a pipe", f.Name(), fi.Mode(), err)
		}
	}
	got, _ := io.ReadAll(c.Stdin)
	if string(got) != "input\n" {
		t.Errorf("stdin read %q through the relay", got)
	}
	io.WriteString(c.Stdout, "output\n")
	io.WriteString(c.Stderr, "discarded\n")
	c.Started()
	c.Close()
	if b, _ := os.ReadFile(dir + "/out"); string(b) != "output\n" {
		t.Errorf("the file got %q", b)
	}
	// A FIFO of the filesystem is a file of the host's too.
	if err := unix.Mkfifo(dir+"/fifo", 0o600); err != nil {
		t.Fatal(err)
	}
	fifo, err := os.OpenFile(dir+"/fifo", os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fifo.Close()
	cf, err := Open(fifo, fifo, fifo, nil)
	if err != nil {
		t.Fatal(err)
	}
	if cf.Stdin == fifo || cf.Stdout == fifo {
		t.Error("a FIFO of the filesystem was handed in as it is")
	}
	cf.Started()
	fifo.Close()
	cf.Close()
	d, err := os.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := Open(d, outF, outF, nil); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Errorf("Open(a directory as stdin) = %v, want a refusal naming the directory", err)
	}
}

// TestAttach: on a terminal, init gets /dev/null (never the user's
// terminal), and the pty it sends back is sized like the user's and relayed.
func TestAttach(t *testing.T) {
	userMaster, userTTY, err := pty.Open()
	if err != nil {
		t.Skipf("no pty: %v", err)
	}
	defer userMaster.Close()
	defer userTTY.Close()
	pty.Setsize(userMaster, &pty.Winsize{Rows: 33, Cols: 99})
	c, err := Open(userTTY, userTTY, userTTY, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !c.TTY || c.Stdin.Name() != os.DevNull {
		t.Fatalf("Open(tty) = tty %v, stdin %s; want /dev/null for init", c.TTY, c.Stdin.Name())
	}
	master, slave, err := pty.Open() // stands in for the one init opens
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Attach(master); err != nil {
		t.Fatal(err)
	}
	if rows, cols, err := pty.Getsize(slave); err != nil || rows != 33 || cols != 99 {
		t.Errorf("command pty size %dx%d (%v), want 33x99", rows, cols, err)
	}
	slave.WriteString("from the sandbox\n")
	line, err := bufio.NewReader(userMaster).ReadString('\n')
	if err != nil || !strings.Contains(line, "from the sandbox") {
		t.Errorf("user terminal read %q, %v", line, err)
	}
	slave.Close()
	c.Close()
}

// TestRelayFiltered: output relayed to a terminal of the user's goes
// through the wrapper: an OSC 52 the command writes never reaches it.
func TestRelayFiltered(t *testing.T) {
	wrap := func(w io.Writer) io.Writer { return termfilter.NewWriter(w, nil) }
	c, userMaster, userTTY := openOnTerminal(t, wrap)
	if c.TTY || c.Stdout == userTTY || c.Stderr == userTTY {
		t.Fatalf("a terminal stdout is not relayed: tty %v", c.TTY)
	}
	c.Stdout.WriteString("out \x1b]52;c;ZWNobyBwd25lZAo=\a\x1b[1mbold\n")
	c.Stderr.WriteString("err \x1b]52;c;?\x1b\\\n")
	c.Close()
	var got strings.Builder
	br := bufio.NewReader(userMaster)
	for range 2 {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		got.WriteString(line)
	}
	if strings.Contains(got.String(), "]52") || !strings.Contains(got.String(), "\x1b[1mbold") {
		t.Errorf("the terminal got %q", got.String())
	}
}

// TestSettleUndoes: what the command's output left set on a terminal of
// the user's (concealed text, the alternate screen) is undone before
// stockade writes its own lines there, and only once; and stockade's lines
// start on a clean line of their own, not where the command left the
// cursor (on text written to look like them).
func TestSettleUndoes(t *testing.T) {
	for _, tc := range []struct {
		name, out, errOut string
		want              []string // in this order, before the finding
	}{
		// Leaving 1049 restores the attributes saved on entry: the
		// reset must come after it.
		{"concealed then alternate screen", "shown\x1b[8m\x1b[30;40m\x1b[?1049h", "", []string{"\x1b[?1049l", "\x1b[m"}},
		{"alternate screen then concealed", "shown\x1b[?1049h\x1b[8m\x1b[30;40m", "", []string{"\x1b[m", "\x1b[?1049l"}},
		// The cursor put back at the top, over padding: the report goes
		// to the screen's last line.
		{"cursor placed", "\x1b[2J\x1b[H                    ; expected\n\x1b[H", "", []string{"\x1b[999;1H\r"}},
		{"scroll region", "text\n\x1b[5;6r", "", []string{"\x1b[r", "\x1b[999;1H\r"}},
		// stdout and stderr, one terminal: one move for both.
		{"both streams", "\x1b[8mout", "err\x1b[1A", []string{"\x1b[m", "\x1b[999;1H\r"}},
		{"both mid-line", "out", "err", []string{"\r"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, userMaster, userTTY := openOnTerminal(t, nil)
			c.Stdout.WriteString(tc.out)
			if tc.errOut != "" {
				c.Stderr.WriteString(tc.errOut)
			}
			c.Settle()
			c.Settle()
			userTTY.WriteString("FINDING\n")
			c.Close()
			var got strings.Builder
			br := bufio.NewReader(userMaster)
			for !strings.Contains(got.String(), "FINDING") {
				line, err := br.ReadString('\n')
				if err != nil {
					t.Fatalf("%v after %q", err, got.String())
				}
				got.WriteString(line)
			}
			s := got.String()
			at := len(tc.out) + len(tc.errOut) - 1
			for _, w := range tc.want {
				i := strings.Index(s[at+1:], w)
				if i < 0 {
					t.Fatalf("the terminal got %q; want %q after what the command wrote, in order %q", s, w, tc.want)
				}
				at += 1 + i
			}
			finding := strings.Index(s, "FINDING")
			if finding < at || !strings.HasSuffix(s[:finding], "\x1b[J") {
				t.Errorf("the terminal got %q; want the undo, then a clean line (ESC [ J), then the finding", s)
			}
			if strings.Count(s, "\x1b[J") != 1 {
				t.Errorf("the terminal got %q; want one settle", s)
			}
		})
	}
}

// openOnTerminal opens a console whose stdout and stderr are a terminal of
// the user's (a pty; its master is returned to read what reached it) and
// whose stdin is a pipe: the relay path, not the command's own pty.
func openOnTerminal(t *testing.T, wrap func(io.Writer) io.Writer) (c *Console, userMaster, userTTY *os.File) {
	t.Helper()
	userMaster, userTTY, err := pty.Open()
	if err != nil {
		t.Skipf("no pty: %v", err)
	}
	t.Cleanup(func() { userMaster.Close(); userTTY.Close() })
	stdin, stdinW, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { stdin.Close(); stdinW.Close() })
	if c, err = Open(stdin, userTTY, userTTY, wrap); err != nil {
		t.Fatal(err)
	}
	return c, userMaster, userTTY
}
