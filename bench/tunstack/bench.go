package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The namespaces of the benchmark, all its own (tsb-*): the server's, the
// host's (where the relays run and dial from, as stockade's supervisor
// does), and one client namespace per way of capture.
const (
	nsSrv   = "tsb-srv"
	nsHost  = "tsb-host"
	nsNFT   = "tsb-nft"
	nsTUN   = "tsb-tun"
	nsTUN64 = "tsb-tun64"

	srvAddr  = "198.51.100.10:8080"
	srvAddr6 = "[2001:db8:5100::10]:8080"
)

// way is one way for the client to reach the server.
type way struct {
	name, ns string
	relay    []string // relay flags; nil: direct
	pid      int
}

func runBench(args []string) error {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	rounds := fs.Int("rounds", 15, "interleaved rounds of the download and the round trips")
	samples := fs.Int("samples", 200, "connections per way and round in the round trips")
	setupRounds := fs.Int("setup", 40, "processes per way timing the capture's setup in fresh namespaces")
	setupWarm := fs.Int("setup-warm", 10, "fresh namespaces per setup process")
	held := fs.Int("held", 256, "connections held open at once for the memory under load")
	buf := fs.Int("buf", 32<<10, "tun: bytes of each direction's copy buffer in the relay")
	sack := fs.Bool("sack", false, "tun: SACK and RACK in the relay's stack")
	nonet := fs.String("nonet", "", "the same program built with -tags nonetstack: compare size and start")
	fs.Parse(args)
	if os.Getuid() != 0 {
		return fmt.Errorf("run it as root: it makes network namespaces")
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	ways := []*way{
		{name: "direct", ns: nsHost},
		{name: "nft", ns: nsNFT, relay: []string{"-way", "nft", "-ns", nsNFT}},
		{name: "tun", ns: nsTUN, relay: []string{"-way", "tun", "-ns", nsTUN, "-mtu", "1500"}},
		{name: "tun64k", ns: nsTUN64, relay: []string{"-way", "tun", "-ns", nsTUN64, "-mtu", "65520"}},
	}
	var procs []*exec.Cmd
	defer func() {
		for _, p := range procs {
			p.Process.Kill()
			p.Wait()
		}
		teardown()
	}()
	teardown()
	if err := netUp(); err != nil {
		return err
	}
	srv := exec.Command("ip", "netns", "exec", nsSrv, self, "serve", "-listen", srvAddr+","+srvAddr6)
	srv.Stderr = os.Stderr
	if err := srv.Start(); err != nil {
		return err
	}
	procs = append(procs, srv)
	if err := waitFor(func() error { _, err := clientRun(self, nsHost, "-mode", "rr", "-n", "1"); return err }); err != nil {
		return fmt.Errorf("the server does not answer: %w", err)
	}

	fmt.Printf("# tunstack: %s, %d rounds\n\n", time.Now().UTC().Format("2006-01-02 15:04 UTC"), *rounds)
	mem := map[string]*memory{}
	for _, w := range ways {
		if w.relay == nil {
			continue
		}
		cmd := exec.Command("ip", append([]string{"netns", "exec", nsHost, self, "relay", "-buf", strconv.Itoa(*buf), "-sack=" + strconv.FormatBool(*sack)}, w.relay...)...)
		cmd.Stderr = os.Stderr
		out, _ := cmd.StdoutPipe()
		if err := cmd.Start(); err != nil {
			return err
		}
		procs = append(procs, cmd)
		line, _ := bufio.NewReader(out).ReadString('\n')
		if strings.TrimSpace(line) != "ready" {
			return fmt.Errorf("relay %s did not start", w.name)
		}
		w.pid = cmd.Process.Pid // ip netns exec execs the program itself
		time.Sleep(200 * time.Millisecond)
		mem[w.name] = &memory{ready: rss(w.pid)}
	}
	for _, w := range ways {
		if _, err := clientRun(self, w.ns, "-mode", "rr", "-n", "1"); err != nil {
			return fmt.Errorf("%s: no connection through it: %w", w.name, err)
		}
	}

	// What else a program in each namespace meets.
	fmt.Println("## UDP, ICMP and IPv6 from the client's namespace")
	fmt.Println()
	fmt.Printf("| way | UDP to the server's address | ICMP echo to it | ICMP echo to %s, which no host has | TCP to its IPv6 address |\n", noHost)
	fmt.Println("|---|---|---|---|---|")
	for _, w := range ways {
		out, err := clientRun(self, w.ns, "-mode", "probe", "-addr6", srvAddr6)
		if err != nil {
			return err
		}
		var p probeResult
		json.Unmarshal(out, &p)
		fmt.Printf("| %s | %s | %s | %s | %s |\n", w.name, p.UDP, p.ICMP, p.Void, p.TCP6)
	}
	fmt.Println()

	// The download and the round trips, interleaved: each round runs every
	// way once, in an order that rotates.
	secs := map[string][]float64{}
	first := map[string][][]int64{}
	rtt := map[string][][]int64{}
	cpuDown, cpuRR := map[string][]float64{}, map[string][]float64{} // the relay's CPU time, ns
	for i := range *rounds {
		for k := range ways {
			w := ways[(i+k)%len(ways)]
			stop := make(chan struct{})
			var peak int64
			var wg sync.WaitGroup
			if w.pid != 0 {
				wg.Go(func() { peak = sample(w.pid, stop) })
			}
			c0 := cpu(w.pid)
			out, err := clientRun(self, w.ns, "-mode", "download")
			cpuDown[w.name] = append(cpuDown[w.name], float64(cpu(w.pid)-c0))
			close(stop)
			wg.Wait()
			if err != nil {
				return fmt.Errorf("%s download: %w", w.name, err)
			}
			var d downloadResult
			json.Unmarshal(out, &d)
			secs[w.name] = append(secs[w.name], d.Secs)
			if m := mem[w.name]; m != nil {
				m.download = max(m.download, peak)
			}
		}
		for k := range ways {
			w := ways[(i+k)%len(ways)]
			c0 := cpu(w.pid)
			out, err := clientRun(self, w.ns, "-mode", "rr", "-n", strconv.Itoa(*samples), "-bytes", "1024")
			cpuRR[w.name] = append(cpuRR[w.name], float64(cpu(w.pid)-c0)/float64(*samples))
			if err != nil {
				return fmt.Errorf("%s round trips: %w", w.name, err)
			}
			var r rrResult
			json.Unmarshal(out, &r)
			first[w.name] = append(first[w.name], r.First)
			rtt[w.name] = append(rtt[w.name], r.RTT)
		}
	}
	fmt.Printf("## 64 MiB download, %d rounds\n\n", *rounds)
	fmt.Println("| way | median | MiB/s | throughput of direct (median of the rounds' ratios) | the relay's CPU time per download |")
	fmt.Println("|---|---:|---:|---:|---:|")
	for _, w := range ways {
		var ratios []float64
		for i, s := range secs[w.name] {
			ratios = append(ratios, secs["direct"][i]/s)
		}
		m := median(secs[w.name])
		fmt.Printf("| %s | %.1f ms | %.0f | %.2f | %s |\n", w.name, m*1000, 64/m, median(ratios), cpuMs(cpuDown[w.name], 1e6, "ms"))
	}
	fmt.Println()
	fmt.Printf("## Round trips, %d rounds × %d connections: connect, a 4-byte request, the first byte of a 1 KiB answer\n\n", *rounds, *samples)
	fmt.Println("| way | p50 | p90 | p50 of direct's (median of the rounds' ratios) | p90 ratio | 1 KiB exchange on an open connection, p50 | p90 | the relay's CPU time per connection |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|---:|")
	for _, w := range ways {
		var r50, r90 []float64
		for i, s := range first[w.name] {
			d := first["direct"][i]
			r50 = append(r50, pct(s, 50)/pct(d, 50))
			r90 = append(r90, pct(s, 90)/pct(d, 90))
		}
		all, allRTT := slices.Concat(first[w.name]...), slices.Concat(rtt[w.name]...)
		fmt.Printf("| %s | %.0f µs | %.0f µs | %.2f | %.2f | %.0f µs | %.0f µs | %s |\n", w.name,
			pct(all, 50)/1e3, pct(all, 90)/1e3, median(r50), median(r90), pct(allRTT, 50)/1e3, pct(allRTT, 90)/1e3,
			cpuMs(cpuRR[w.name], 1e3, "µs"))
	}
	fmt.Println()

	// Memory: connections held open at once, then idle again.
	for _, w := range ways {
		if w.pid == 0 {
			continue
		}
		cmd := exec.Command("ip", "netns", "exec", w.ns, self, "client", "-mode", "hold", "-n", strconv.Itoa(*held), "-bytes", strconv.Itoa(256<<10))
		in, _ := cmd.StdinPipe()
		out, _ := cmd.StdoutPipe()
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			return err
		}
		line, _ := bufio.NewReader(out).ReadString('\n')
		if strings.TrimSpace(line) != "held" {
			cmd.Process.Kill()
			cmd.Wait()
			return fmt.Errorf("%s: %d connections at once failed", w.name, *held)
		}
		time.Sleep(300 * time.Millisecond)
		mem[w.name].held = rss(w.pid)
		in.Close()
		cmd.Wait()
	}
	time.Sleep(2 * time.Second)
	fmt.Println("## Resident memory of the relay process (VmRSS)")
	fmt.Println()
	fmt.Printf("| way | started, idle | peak during a download | %d connections held (256 KiB read on each) | idle after all | VmHWM |\n", *held)
	fmt.Println("|---|---:|---:|---:|---:|---:|")
	for _, w := range ways {
		m := mem[w.name]
		if m == nil {
			continue
		}
		fmt.Printf("| %s | %s | %s | %s | %s | %s |\n", w.name, mib(m.ready), mib(m.download), mib(m.held), mib(rss(w.pid)), mib(status(w.pid, "VmHWM")))
	}
	fmt.Println()

	// Setup: a fresh process per measurement (its first namespace is a
	// new supervisor's), ways alternating.
	cold := map[string][]setupResult{}
	for i := range *setupRounds * 2 {
		wy := []string{"nft", "tun"}[i%2]
		cmd := exec.Command("ip", "netns", "exec", nsHost, self, "setup", "-way", wy, "-n", strconv.Itoa(*setupWarm+1))
		cmd.Stderr = os.Stderr
		out, err := cmd.Output()
		if err != nil {
			return fmt.Errorf("setup %s: %w", wy, err)
		}
		var r setupResult
		json.Unmarshal(out, &r)
		cold[wy] = append(cold[wy], r)
	}
	fmt.Printf("## Setting the capture up in a fresh namespace (%d processes per way, %d namespaces each)\n\n", *setupRounds, *setupWarm+1)
	fmt.Println("nft: capture listener, nftables batch, routes. tun: TUN device, link up, addresses and routes, gVisor stack and forwarder. \"first byte\": from the same start to the first byte of a first connection through it to the server.")
	fmt.Println()
	fmt.Println("| way | setup, process's first namespace (p50) | of which the gVisor stack | first byte, first namespace (p50) | setup, later namespaces (p50) | of which the stack | first byte, later (p50) |")
	fmt.Println("|---|---:|---:|---:|---:|---:|---:|")
	for _, wy := range []string{"nft", "tun"} {
		var cs, cst, cf, ws, wst, wf []int64
		for _, r := range cold[wy] {
			cs, cst, cf = append(cs, r.Setup[0]), append(cst, r.Stack[0]), append(cf, r.First[0])
			ws, wst, wf = append(ws, r.Setup[1:]...), append(wst, r.Stack[1:]...), append(wf, r.First[1:]...)
		}
		us := func(v []int64) string {
			if p := pct(v, 50); p > 0 {
				return fmt.Sprintf("%.0f µs", p/1e3)
			}
			return "(none)"
		}
		fmt.Printf("| %s | %s | %s | %s | %s | %s | %s |\n", wy, us(cs), us(cst), us(cf), us(ws), us(wst), us(wf))
	}
	fmt.Println()

	if *nonet != "" {
		if err := startCost(self, *nonet); err != nil {
			return err
		}
	}
	return nil
}

type memory struct{ ready, download, held int64 }

// clientRun runs the client in namespace ns and returns its output.
func clientRun(self, ns string, args ...string) ([]byte, error) {
	cmd := exec.Command("ip", append([]string{"netns", "exec", ns, self, "client"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("%v: %s", err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

func waitFor(f func() error) error {
	var err error
	for range 50 {
		if err = f(); err == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return err
}

func ip(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// netUp makes the namespaces: a veth pair between the host's and the
// server's, lo up in each; the relays make the rest of the clients'.
func netUp() error {
	for _, ns := range []string{nsSrv, nsHost, nsNFT, nsTUN, nsTUN64} {
		if err := ip("netns", "add", ns); err != nil {
			return err
		}
		if err := ip("-n", ns, "link", "set", "lo", "up"); err != nil {
			return err
		}
	}
	steps := [][]string{
		{"link", "add", "tsb-h0", "netns", nsHost, "type", "veth", "peer", "name", "tsb-s0", "netns", nsSrv},
		{"-n", nsHost, "addr", "add", "198.51.100.1/24", "dev", "tsb-h0"},
		{"-n", nsHost, "addr", "add", "2001:db8:5100::1/64", "dev", "tsb-h0", "nodad"},
		{"-n", nsHost, "link", "set", "tsb-h0", "up"},
		{"-n", nsSrv, "addr", "add", "198.51.100.10/24", "dev", "tsb-s0"},
		{"-n", nsSrv, "addr", "add", "2001:db8:5100::10/64", "dev", "tsb-s0", "nodad"},
		{"-n", nsSrv, "link", "set", "tsb-s0", "up"},
	}
	for _, s := range steps {
		if err := ip(s...); err != nil {
			return err
		}
	}
	// Tens of thousands of connections to one address and port, from the
	// host's namespace (direct, and every relay's dial) and from each
	// client's: without these, TIME_WAIT fills the ephemeral ports and
	// connect(2) spends milliseconds looking for a free one.
	for _, ns := range []string{nsHost, nsNFT, nsTUN, nsTUN64} {
		out, err := exec.Command("ip", "netns", "exec", ns, "sysctl", "-q", "-w",
			"net.ipv4.tcp_tw_reuse=1", "net.ipv4.ip_local_port_range=1024 65535").CombinedOutput()
		if err != nil {
			return fmt.Errorf("sysctl in %s: %v: %s", ns, err, out)
		}
	}
	return nil
}

func teardown() {
	for _, ns := range []string{nsSrv, nsHost, nsNFT, nsTUN, nsTUN64} {
		exec.Command("ip", "netns", "del", ns).Run()
	}
}

// status reads a field of /proc/PID/status, in bytes.
func status(pid int, field string) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.Lines(string(b)) {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			f := strings.Fields(rest)
			if len(f) > 0 {
				kb, _ := strconv.ParseInt(f[0], 10, 64)
				return kb << 10
			}
		}
	}
	return 0
}

func rss(pid int) int64 { return status(pid, "VmRSS") }

// cpu is the CPU time of every thread of pid, in ns (schedstat), or 0 for
// no process.
func cpu(pid int) int64 {
	if pid == 0 {
		return 0
	}
	dirs, _ := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	var sum int64
	for _, d := range dirs {
		b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, d.Name()))
		if f := strings.Fields(string(b)); len(f) > 0 {
			n, _ := strconv.ParseInt(f[0], 10, 64)
			sum += n
		}
	}
	return sum
}

// cpuMs is the median of v (ns) in unit, "" when v is all zeros (no relay).
func cpuMs(v []float64, scale float64, unit string) string {
	m := median(v)
	if m == 0 {
		return "(none)"
	}
	return fmt.Sprintf("%.0f %s", m/scale, unit)
}

// sample returns the largest VmRSS of pid until stop closes.
func sample(pid int, stop <-chan struct{}) int64 {
	var peak int64
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	for {
		peak = max(peak, rss(pid))
		select {
		case <-stop:
			return peak
		case <-t.C:
		}
	}
}

func mib(b int64) string { return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20)) }

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// pct is the p-th percentile (nearest rank) of v.
func pct(v []int64, p int) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	i := (p*len(s) + 99) / 100
	return float64(s[max(i-1, 0)])
}

// startCost compares the start of this program and of the same program
// without the netstack (-tags nonetstack), run alternately: gVisor's
// packages are initialised at every start of a binary that links them.
func startCost(self, nonet string) error {
	const n = 200
	t := map[string][]float64{}
	for i := range 2 * n {
		bin := []string{self, nonet}[i%2]
		t0 := time.Now()
		if err := exec.Command(bin, "noop").Run(); err != nil {
			return err
		}
		t[bin] = append(t[bin], time.Since(t0).Seconds())
	}
	size := func(p string) int64 {
		st, _ := os.Stat(p)
		return st.Size()
	}
	var diffs []float64
	for i := range n {
		diffs = append(diffs, t[self][i]-t[nonet][i])
	}
	fmt.Printf("## The netstack in the binary (%d starts each, alternating)\n\n", n)
	fmt.Println("| binary | size | start to exit (p50) |")
	fmt.Println("|---|---:|---:|")
	fmt.Printf("| with gVisor's netstack | %.1f MiB | %.2f ms |\n", float64(size(self))/(1<<20), median(t[self])*1000)
	fmt.Printf("| without (-tags nonetstack) | %.1f MiB | %.2f ms |\n", float64(size(nonet))/(1<<20), median(t[nonet])*1000)
	fmt.Printf("\nPaired difference of a start, median: %+.2f ms.\n\n", median(diffs)*1000)
	return nil
}
