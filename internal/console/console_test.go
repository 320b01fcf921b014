package console

import (
	"bufio"
	"os"
	"strings"
	"testing"

	"github.com/creack/pty"
)

// TestPassThrough: without a terminal, the command gets the user's own
// descriptors (pipes or files), untouched.
func TestPassThrough(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	defer w.Close()
	c, err := Open(r, w, w)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.TTY || c.Stdin != r || c.Stdout != w || c.Stderr != w {
		t.Errorf("Open(pipes) = tty %v, %v %v %v; want the pipes themselves", c.TTY, c.Stdin, c.Stdout, c.Stderr)
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
	c, err := Open(userTTY, userTTY, userTTY)
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
