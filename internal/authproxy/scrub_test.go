package authproxy

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"testing"
	"testing/iotest"
)

// chunks is a reader that returns one chunk per Read.
type chunks struct{ parts []string }

func (c *chunks) Read(p []byte) (int, error) {
	if len(c.parts) == 0 {
		return 0, io.EOF
	}
	n := copy(p, c.parts[0])
	c.parts[0] = c.parts[0][n:]
	if c.parts[0] == "" {
		c.parts = c.parts[1:]
	}
	return n, nil
}

func TestScrubber(t *testing.T) {
	const key = "sk-real-abcdef"
	mask := strings.Repeat("*", len(key))
	inputs := []string{
		"",
		"no key here",
		key,
		"a" + key + "b" + key + key + "c",
		"sk-real-abc sk-real-abcdeX " + key,   // near misses stay
		"ssk-real-abcdef sk-sk-real-abcdef s", // overlapping starts
		"data: {\"k\":\"" + key + "\"}\n\n" + "sk-r", // ends in a key prefix
	}
	for _, in := range inputs {
		want := strings.ReplaceAll(in, key, mask)
		// Every split point, and one byte at a time.
		for cut := 0; cut <= len(in); cut++ {
			got, err := io.ReadAll(newScrubber(io.NopCloser(&chunks{[]string{in[:cut], in[cut:]}}), key))
			if err != nil || string(got) != want {
				t.Fatalf("%q cut at %d: got %q, %v; want %q", in, cut, got, err, want)
			}
		}
		got, err := io.ReadAll(newScrubber(io.NopCloser(iotest.OneByteReader(strings.NewReader(in))), key))
		if err != nil || string(got) != want {
			t.Fatalf("%q one byte at a time: got %q, %v", in, got, err)
		}
	}
	big := strings.Repeat("x", scrubBufSize-3) + key + strings.Repeat("y", 3*scrubBufSize)
	got, _ := io.ReadAll(newScrubber(io.NopCloser(strings.NewReader(big)), key))
	if string(got) != strings.ReplaceAll(big, key, mask) {
		t.Errorf("a key across the buffer boundary was not masked")
	}
	if err := iotest.TestReader(newScrubber(io.NopCloser(strings.NewReader(big)), key), []byte(strings.ReplaceAll(big, key, mask))); err != nil {
		t.Error(err)
	}
}

// blockAfter returns its data, then blocks until closed.
type blockAfter struct {
	data []byte
	stop chan struct{}
}

func (b *blockAfter) Read(p []byte) (int, error) {
	if len(b.data) > 0 {
		n := copy(p, b.data)
		b.data = b.data[n:]
		return n, nil
	}
	<-b.stop
	return 0, io.EOF
}

// TestScrubberDoesNotHoldEvents: a chunk that cannot be the start of the
// key is returned at once, without waiting for more input.
func TestScrubberDoesNotHoldEvents(t *testing.T) {
	src := &blockAfter{data: []byte("data: {\"text\":\"s\"}\n\n"), stop: make(chan struct{})}
	defer close(src.stop)
	s := newScrubber(io.NopCloser(src), "sk-real-abcdef")
	buf := make([]byte, 100)
	n, err := s.Read(buf) // would block forever if the chunk were held
	if err != nil || !bytes.Equal(buf[:n], []byte("data: {\"text\":\"s\"}\n\n")) {
		t.Errorf("got %q, %v", buf[:n], err)
	}
}

func TestScrubHeader(t *testing.T) {
	h := http.Header{"A": {"x"}, "B": {"y", "has KEY123456 inside"}, "Key123456": {"z"}, "C": {"KEY12345"}}
	scrubHeader(h, "KEY123456")
	if len(h) != 2 || h.Get("A") != "x" || h.Get("C") != "KEY12345" {
		t.Errorf("got %v", h)
	}
}
