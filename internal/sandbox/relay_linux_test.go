//go:build linux

package sandbox

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stockade-dev/stockade/internal/mount"
)

// The relay's registration is the process's, made for good by the first
// sandbox any test starts: each case runs in a child of its own.
const (
	idleArg  = "__stockade_test_relay_idle"
	keptArg  = "__stockade_test_relay_kept"
	childEnv = "STOCKADE_TEST_RELAY_WORKDIR"
	childSig = "STOCKADE_TEST_RELAY_SIGNAL"
)

func init() {
	Entrypoints[idleArg] = idleMain
	Entrypoints[keptArg] = keptMain
}

// idleMain takes SIGTERM itself, as a session supervisor does, and checks
// that with no sandbox running the relay hands it to SignalsWhenIdle's
// function, leaves its own registration alone, and does not end it.
func idleMain() int {
	own := make(chan os.Signal, 1)
	signal.Notify(own, syscall.SIGTERM)
	idle := make(chan os.Signal, 1)
	SignalsWhenIdle(func(sig os.Signal) { idle <- sig })
	forwardSignals()
	syscall.Kill(os.Getpid(), syscall.SIGTERM)
	for _, c := range []struct {
		who string
		ch  chan os.Signal
	}{{"SignalsWhenIdle's function", idle}, {"the process's own registration", own}} {
		select {
		case sig := <-c.ch:
			if sig != syscall.SIGTERM {
				fmt.Printf("%s heard %v, not SIGTERM\n", c.who, sig)
				return 1
			}
		case <-time.After(10 * time.Second):
			fmt.Printf("%s heard nothing\n", c.who)
			return 1
		}
	}
	return 0
}

// keptMain takes a relayed signal itself too, starts a sandbox, sends the
// signal to itself, and checks that both its own registration and the
// sandbox's command hear it. The signal is SIGUSR1, or the one childSig
// names (the parent starts the child with SIGINT ignored for that case).
func keptMain() int {
	sig, name := syscall.SIGUSR1, "USR1"
	if os.Getenv(childSig) == "INT" {
		sig, name = syscall.SIGINT, "INT"
	}
	own := make(chan os.Signal, 1)
	signal.Notify(own, sig)
	spec, err := NewSpec(Config{
		ID: "relay1", Workdir: os.Getenv(childEnv), Home: "/nonexistent-home",
		Argv: []string{"/bin/sh", "-c", "trap 'echo got; exit 0' " + name + "; echo ready; while :; do sleep 0.05; done"},
		Env:  []string{"PATH=/usr/bin:/bin"},
	}, mount.OS{})
	if err != nil {
		fmt.Println(err)
		return 1
	}
	r, w, _ := os.Pipe()
	sb, err := Start(spec, Options{Stdout: w, Stderr: os.Stderr})
	w.Close()
	if err != nil {
		fmt.Println(err)
		return 1
	}
	// A command that cannot trap the signal (it came in ignored) runs on:
	// it is given ten seconds. (kill, not Kill: Wait below reaps it.)
	timer := time.AfterFunc(10*time.Second, sb.kill)
	defer timer.Stop()
	buf := make([]byte, 64)
	if n, _ := r.Read(buf); !strings.HasPrefix(string(buf[:n]), "ready") {
		fmt.Printf("first output %q, not ready\n", buf[:n])
		sb.Wait()
		return 1
	}
	syscall.Kill(os.Getpid(), sig)
	select {
	case <-own:
	case <-time.After(10 * time.Second):
		fmt.Printf("the process's own registration of %v heard nothing\n", sig)
		sb.Wait()
		return 1
	}
	n, _ := r.Read(buf)
	code, err := sb.Wait()
	if string(buf[:n]) != "got\n" || code != 0 || err != nil {
		fmt.Printf("the command printed %q and exited %d (%v); want got and 0\n", buf[:n], code, err)
		return 1
	}
	return 0
}

// runChild runs this test binary as arg, through sh -c prefix, with env.
func runChild(t *testing.T, prefix, arg string, env ...string) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("/bin/sh", "-c", prefix+`exec "$0" "$1"`, self, arg)
	cmd.Env = append(append(os.Environ(), childEnv+"="+t.TempDir()), env...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s: %v\n%s", arg, err, out)
	}
}

// TestRelayIdle: a relayed signal with no sandbox running goes where
// SignalsWhenIdle says, and does not end a process that takes it itself.
func TestRelayIdle(t *testing.T) {
	runChild(t, "", idleArg)
}

// TestRelayKeepsOtherRegistrations: the relay leaves the process's own
// registration of a signal alone, and the command hears the signal.
func TestRelayKeepsOtherRegistrations(t *testing.T) {
	requireSandbox(t)
	runChild(t, "", keptArg)
}

// TestRelayIgnoredAtStart: a stockade started with SIGINT ignored (a
// script's background job) still relays it, and the command can trap it.
func TestRelayIgnoredAtStart(t *testing.T) {
	requireSandbox(t)
	runChild(t, `trap "" INT; `, keptArg, childSig+"=INT")
}
