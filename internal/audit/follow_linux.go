package audit

import (
	"os"

	"golang.org/x/sys/unix"
)

// watch returns a channel that receives when the file at path may have
// changed, and a function that stops watching. The channel is nil when
// inotify is not available (Follow then polls).
func watch(path string) (<-chan struct{}, func()) {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return nil, func() {}
	}
	const mask = unix.IN_MODIFY | unix.IN_ATTRIB | unix.IN_CLOSE_WRITE | unix.IN_MOVE_SELF | unix.IN_DELETE_SELF
	if _, err := unix.InotifyAddWatch(fd, path, mask); err != nil {
		unix.Close(fd)
		return nil, func() {}
	}
	// A non-blocking descriptor goes to the runtime poller, so the read
	// below parks the goroutine, and Close wakes it.
	f := os.NewFile(uintptr(fd), "inotify")
	ch := make(chan struct{}, 1)
	go func() {
		var buf [4096]byte
		for {
			if _, err := f.Read(buf[:]); err != nil {
				return
			}
			select {
			case ch <- struct{}{}:
			default: // a wake-up is already pending; it covers this change too
			}
		}
	}()
	return ch, func() { f.Close() }
}
