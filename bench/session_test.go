package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BenchmarkSession measures what an idle session costs and how fast a
// client attaches: the resident memory of each supervisor (bench/README.md: under
// 30 MiB) and of its sandbox's init, and the time from connecting to the
// control socket to the first replayed output (docs/control-api.md).
func BenchmarkSession(b *testing.B) {
	bin := requireStockade(b)
	state := filepath.Join(scratch, "state")
	env := append(sandboxEnv(), "XDG_STATE_HOME="+state)
	work := filepath.Join(scratch, "session-work")
	os.MkdirAll(work, 0o755)
	const sessions = 5
	var ids []string
	for range sessions {
		cmd := exec.Command(bin, "run", "-d", "--log-level", "error", "--", "sh", "-c", "echo ready; exec sleep 100000")
		cmd.Dir, cmd.Env = work, env
		out, err := cmd.Output()
		if err != nil {
			b.Fatalf("run -d: %v", err)
		}
		ids = append(ids, strings.TrimSpace(string(out)))
	}
	b.Cleanup(func() {
		for _, id := range ids {
			stop := exec.Command(bin, "stop", "-s", id)
			stop.Env = env
			stop.Run()
		}
	})
	var supRSS, initRSS []float64
	for _, id := range ids {
		var s struct {
			PID     int `json:"pid"`
			InitPID int `json:"init_pid"`
		}
		raw, err := os.ReadFile(filepath.Join(state, "stockade", "sessions", id, "session.json"))
		if err != nil || json.Unmarshal(raw, &s) != nil {
			b.Fatalf("session %s: %v", id, err)
		}
		supRSS = append(supRSS, rssMiB(b, s.PID))
		initRSS = append(initRSS, rssMiB(b, s.InitPID))
	}
	var attach []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d, err := attachOnce(filepath.Join(state, "stockade", "sessions", ids[i%sessions], "control.sock"))
		if err != nil {
			b.Fatal(err)
		}
		attach = append(attach, d)
	}
	b.StopTimer()
	b.ReportMetric(maxOf(supRSS), "supervisor-max-MiB")
	b.ReportMetric(maxOf(initRSS), "init-max-MiB")
	b.ReportMetric(float64(Median(attach).Microseconds())/1000, "attach-ms")
	verdict := "within"
	if maxOf(supRSS) >= 30 {
		verdict = "OVER"
	}
	b.Logf("%d idle sessions: supervisor RSS max %.1f MiB (%s the 30 MiB budget), init RSS max %.1f MiB; attach to first output: median %s over %d attaches",
		sessions, maxOf(supRSS), verdict, maxOf(initRSS), Median(attach), len(attach))
}

// attachOnce attaches over the documented protocol and returns the time to
// the first output frame (the replayed screen), then detaches.
func attachOnce(sock string) (time.Duration, error) {
	start := time.Now()
	conn, err := net.Dial("unix", sock)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	fmt.Fprintln(conn, `{"v":1,"op":"attach"}`)
	r := bufio.NewReader(conn)
	if line, err := r.ReadString('\n'); err != nil || !strings.Contains(line, `"ok":true`) {
		return 0, fmt.Errorf("attach answer %q: %v", line, err)
	}
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil || hdr[0] != 'o' {
		return 0, fmt.Errorf("first frame %q: %v", hdr[0], err)
	}
	d := time.Since(start)
	conn.Write([]byte{'d', 0, 0, 0, 0})
	return d, nil
}

func rssMiB(b *testing.B, pid int) float64 {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		b.Fatalf("reading the status of %d: %v", pid, err)
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return float64(kb) / 1024
		}
	}
	b.Fatalf("no VmRSS for %d", pid)
	return 0
}

func maxOf(xs []float64) float64 {
	m := 0.0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}
