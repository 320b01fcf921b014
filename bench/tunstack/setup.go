package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"time"

	"golang.org/x/sys/unix"
)

type setupResult struct {
	Setup []int64 // ns: the capture made (nft: listener, rules, routes; tun: device, addresses, routes, stack)
	First []int64 // ns: from the same start to the first byte of the first connection through it
	Stack []int64 // ns, tun: of Setup, the gVisor stack (after the device, its addresses and routes)
}

// setupBench makes a fresh network namespace n times (lo up, untimed) and
// times, in each, setting one way of capture up and a first connection
// through it to the server: the first iteration is the process's first
// (cold), as in a new supervisor. It prints one JSON object.
func setupBench(args []string) error {
	fs := flag.NewFlagSet("setup", flag.ExitOnError)
	way := fs.String("way", "nft", "nft or tun")
	n := fs.Int("n", 1, "fresh namespaces, one after another")
	mtu := fs.Int("mtu", 1500, "tun: the device's MTU")
	addr := fs.String("addr", "198.51.100.10:8080", "server")
	fs.Parse(args)
	var r setupResult
	for range *n {
		s, f, st, err := setupOnce(*way, uint32(*mtu), *addr)
		if err != nil {
			return err
		}
		r.Setup = append(r.Setup, s.Nanoseconds())
		r.First = append(r.First, f.Nanoseconds())
		r.Stack = append(r.Stack, st.Nanoseconds())
	}
	return json.NewEncoder(os.Stdout).Encode(r)
}

func setupOnce(way string, mtu uint32, addr string) (setup, first, stack time.Duration, err error) {
	type result struct {
		setup, first, stack time.Duration
		err                 error
	}
	done := make(chan result, 1)
	go func() {
		// This thread moves to the new namespace and ends with the goroutine.
		runtime.LockOSThread()
		fail := func(err error) { done <- result{err: err} }
		if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
			fail(err)
			return
		}
		if err := loUp(); err != nil {
			fail(err)
			return
		}
		var cleanup func()
		var stack time.Duration
		t0 := time.Now()
		switch way {
		case "nft":
			ln, err := nftInside(nftPort)
			if err != nil {
				fail(err)
				return
			}
			go serveNFT(ln)
			cleanup = func() { ln.Close() }
		case "tun":
			fd, err := tunInside(mtu)
			if err != nil {
				fail(err)
				return
			}
			ts := time.Now()
			t, err := tunServe(fd, mtu)
			if err != nil {
				fail(err)
				return
			}
			stack = time.Since(ts)
			cleanup = t.Close
		default:
			fail(fmt.Errorf("unknown way %q", way))
			return
		}
		t1 := time.Now()
		c, err := net.DialTimeout("tcp", addr, 5*time.Second)
		if err == nil {
			err = ask(c, 1)
		}
		if err == nil {
			var b [1]byte
			_, err = io.ReadFull(c, b[:])
		}
		t2 := time.Now()
		if c != nil {
			c.Close()
		}
		cleanup()
		done <- result{t1.Sub(t0), t2.Sub(t0), stack, err}
	}()
	r := <-done
	return r.setup, r.first, r.stack, r.err
}
