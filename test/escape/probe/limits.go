//go:build linux

package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

// The memory the sandbox's tmpfs mounts hold belongs to no process: without
// a bound, the OOM killer kills host processes to make room for it. These
// actions check the bound from inside, each given the budget the writable
// tmpfs mounts may hold together.
func init() {
	// tmpfs-budget BYTES DIR...: the mounts at DIR... are sized to hold at
	// most BYTES together, with bounded inodes, and the kernel refuses to
	// allocate past each one's size (fallocate checks the size before it
	// allocates anything, so this is cheap even for a budget of gigabytes).
	register("tmpfs-budget", -1, tmpfsBudget)
	// fill BYTES DIR...: writes to each DIR in turn until the kernel says
	// ENOSPC; more than BYTES written in all is an escape. Stops at BYTES
	// plus a chunk, so an unbounded tmpfs cannot take the host's memory.
	register("fill", -1, fill)
	// inotify-instances MAX: takes inotify instances until the kernel
	// refuses; more than MAX taken is an escape (the sandbox used up the
	// user's quota, which the user's editors and tail -f share).
	register("inotify-instances", 1, inotifyInstances)
}

func inotifyInstances(args []string) error {
	max, err := strconv.Atoi(args[0])
	if err != nil || max <= 0 {
		return fmt.Errorf("usage: inotify-instances MAX")
	}
	var fds []int
	defer func() {
		for _, fd := range fds {
			unix.Close(fd)
		}
	}()
	for {
		fd, err := unix.InotifyInit1(unix.IN_CLOEXEC)
		if err != nil {
			return err
		}
		if fds = append(fds, fd); len(fds) > max {
			return found(fmt.Sprintf("took %d inotify instances, over %d", len(fds), max))
		}
	}
}

func budgetArgs(args []string) (int64, []string, error) {
	budget, err := strconv.ParseInt(args[0], 10, 64)
	if err != nil || budget <= 0 || len(args) < 2 {
		return 0, nil, fmt.Errorf("usage: BYTES DIR...")
	}
	return budget, args[1:], nil
}

func tmpfsBudget(args []string) error {
	budget, dirs, err := budgetArgs(args)
	if err != nil {
		return err
	}
	var total, inodes int64
	sizes := map[string]int64{}
	for _, d := range dirs {
		var st unix.Statfs_t
		if err := unix.Statfs(d, &st); err != nil {
			return fmt.Errorf("statfs %s: %w", d, err)
		}
		sizes[d] = int64(st.Blocks) * st.Bsize
		total += sizes[d]
		inodes += int64(st.Files)
	}
	if total > budget {
		return found(fmt.Sprintf("the mounts hold %d bytes together, over %d", total, budget))
	}
	if inodes > budget/4096 {
		return found(fmt.Sprintf("the mounts hold %d inodes together, over one per 4 KiB", inodes))
	}
	for _, d := range dirs {
		p := filepath.Join(d, ".probe-fallocate")
		f, err := os.OpenFile(p, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			return fmt.Errorf("creating %s: %w", p, err)
		}
		err = unix.Fallocate(int(f.Fd()), 0, 0, sizes[d]+1<<20)
		f.Close()
		os.Remove(p)
		if !errors.Is(err, unix.ENOSPC) {
			return found(fmt.Sprintf("fallocate of %d bytes in %s: %v", sizes[d]+1<<20, d, err))
		}
	}
	return unix.ENOSPC
}

func fill(args []string) error {
	budget, dirs, err := budgetArgs(args)
	if err != nil {
		return err
	}
	chunk := make([]byte, 1<<20)
	for i := range chunk {
		chunk[i] = byte(i) // not zero pages
	}
	var total int64
	for _, d := range dirs {
		f, err := os.OpenFile(filepath.Join(d, ".probe-fill"), os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			return fmt.Errorf("creating the file in %s: %w", d, err)
		}
		for {
			n, err := f.Write(chunk)
			total += int64(n)
			if total > budget {
				f.Close()
				return found(fmt.Sprintf("wrote %d bytes, over the budget of %d, and %s still took more", total, budget, d))
			}
			if errors.Is(err, unix.ENOSPC) {
				break
			}
			if err != nil {
				f.Close()
				return found(fmt.Sprintf("writing in %s: %v, not ENOSPC", d, err))
			}
		}
		f.Close() // kept: the next mount must not borrow this one's room
	}
	return unix.ENOSPC
}
