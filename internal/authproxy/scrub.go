package authproxy

import (
	"bytes"
	"io"
	"net/http"
	"strings"
)

// scrubHeader deletes every header whose name or value contains key: an
// upstream that echoes request headers (a debug endpoint, an error that
// quotes the key) must not hand the real key to the agent.
// Names are compared without case: net/http canonicalizes them.
func scrubHeader(h http.Header, key string) {
	lkey := strings.ToLower(key)
	for name, vals := range h {
		if strings.Contains(strings.ToLower(name), lkey) || strings.Contains(strings.Join(vals, "\x00"), key) {
			delete(h, name)
		}
	}
}

// scrubber replaces every occurrence of key in a stream with as many '*',
// so a Content-Length stays true. It holds back only a tail that could be
// the start of the key, so an SSE event (which ends in "\n\n", and no key
// starts with a newline) is never delayed. A stream that ends in an error
// never releases that tail.
type scrubber struct {
	src   io.ReadCloser
	key   []byte
	buf   []byte // buf[off:ready] is scrubbed output, buf[ready:end] the held tail
	off   int
	ready int
	end   int
	err   error
}

const scrubBufSize = 64 << 10

func newScrubber(src io.ReadCloser, key string) *scrubber {
	return &scrubber{src: src, key: []byte(key), buf: make([]byte, scrubBufSize+len(key))}
}

func (s *scrubber) Read(p []byte) (int, error) {
	for s.off == s.ready {
		if s.err != nil {
			return 0, s.err
		}
		s.fill()
	}
	n := copy(p, s.buf[s.off:s.ready])
	s.off += n
	return n, nil
}

// fill reads once from src after the held tail, scrubs, and decides what
// may go out.
func (s *scrubber) fill() {
	held := copy(s.buf, s.buf[s.ready:s.end])
	n, err := s.src.Read(s.buf[held:])
	s.off, s.end, s.err = 0, held+n, err
	data := s.buf[:s.end]
	for i := 0; ; {
		j := bytes.Index(data[i:], s.key)
		if j < 0 {
			break
		}
		for k := range s.key {
			data[i+j+k] = '*'
		}
		i += j + len(s.key)
	}
	s.ready = s.end
	// Only a clean end releases the held tail. A stream cut inside the key
	// (a reset connection, a short Content-Length, a broken gzip) keeps it:
	// released, it would be the start of the key, and an agent that can
	// get the upstream to cut at chosen offsets would read the key piece
	// by piece.
	if err != io.EOF {
		s.ready -= keyPrefixSuffix(data, s.key)
	}
}

// keyPrefixSuffix returns the length of the longest suffix of data that is
// a proper prefix of key.
func keyPrefixSuffix(data, key []byte) int {
	start := max(len(data)-len(key)+1, 0)
	for i := start; i < len(data); i++ {
		j := bytes.IndexByte(data[i:], key[0])
		if j < 0 {
			return 0
		}
		i += j
		if bytes.HasPrefix(key, data[i:]) {
			return len(data) - i
		}
	}
	return 0
}

func (s *scrubber) Close() error { return s.src.Close() }
