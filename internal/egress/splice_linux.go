package egress

import (
	"io"
	"net"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// maxPipes bounds the pipes the tunnels of this process hold at once (two
// descriptors each, one pipe per direction of a tunnel). The connection
// caps (job.ConnCaps) count two descriptors per tunnel and leave a quarter
// of the limit, at least 128, for everything else; 32 pipes take 64 of
// those. A direction that finds none free copies through a buffer instead.
const maxPipes = 32

var pipeSlots = make(chan struct{}, maxPipes)

// splicer moves bytes from one TCP socket to another through a pipe of its
// own, with splice(2): the bytes never enter this process. Go's own
// (*net.TCPConn).ReadFrom splices too, but keeps its pipes in a pool that
// only the garbage collector empties, so 1000 tunnels left 4000 descriptors
// open after they had all closed; this pipe is closed with its direction.
type splicer struct {
	dst, src syscall.RawConn
	r, w     int // the pipe's read and write ends
}

// newSplicer returns a splicer from src to dst, or nil when either is not
// a TCP connection or no pipe is free; the caller then copies.
func newSplicer(dst, src net.Conn) *splicer {
	td, ts := tcpConn(dst), tcpConn(src)
	if td == nil || ts == nil {
		return nil
	}
	rd, err1 := td.SyscallConn()
	rs, err2 := ts.SyscallConn()
	if err1 != nil || err2 != nil {
		return nil
	}
	select {
	case pipeSlots <- struct{}{}:
	default:
		return nil
	}
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		<-pipeSlots
		return nil
	}
	unix.FcntlInt(uintptr(p[1]), unix.F_SETPIPE_SZ, pipeSize) // best effort: a smaller pipe only splices less per call
	return &splicer{dst: rd, src: rs, r: p[0], w: p[1]}
}

// Close closes the pipe and frees its slot.
func (s *splicer) Close() {
	unix.Close(s.r)
	unix.Close(s.w)
	<-pipeSlots
}

// move waits until src has bytes (or its read deadline passes), splices what
// it has, at most max (at most pipeSize), into the pipe, then all of that
// into dst (within dst's write deadline). It returns the bytes that reached
// dst, the error of the read (io.EOF at the end of src) or else of the
// write. After a write error, bytes may be left in the pipe: the tunnel
// must end.
func (s *splicer) move(max int) (n int64, rerr, werr error) {
	var serr error
	err := s.src.Read(func(fd uintptr) bool {
		for {
			n, serr = unix.Splice(int(fd), nil, s.w, nil, max, unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
			if serr != unix.EINTR {
				// The pipe is empty, so EAGAIN is the socket's: wait.
				return serr != unix.EAGAIN
			}
		}
	})
	if err == nil && serr != nil {
		err = os.NewSyscallError("splice", serr)
	}
	if err != nil {
		return 0, err, nil
	}
	if n == 0 {
		return 0, io.EOF, nil
	}
	var done int64
	for done < n {
		var m int64
		err = s.dst.Write(func(fd uintptr) bool {
			for {
				m, werr = unix.Splice(s.r, nil, int(fd), nil, int(n-done), unix.SPLICE_F_MOVE|unix.SPLICE_F_NONBLOCK)
				if werr != unix.EINTR {
					return werr != unix.EAGAIN
				}
			}
		})
		if err == nil && werr != nil {
			err = os.NewSyscallError("splice", werr)
		}
		if err != nil {
			return done, nil, err
		}
		done += m
	}
	return done, nil, nil
}
