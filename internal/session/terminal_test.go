package session

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestRing: the ring holds what a plain buffer cut to its last scrollback
// bytes would, for writes of every size around the ring's.
func TestRing(t *testing.T) {
	var r ring
	var all []byte
	rnd := rand.New(rand.NewPCG(1, 2))
	for i := 0; i < 300; i++ {
		n := []int{0, 1, 100, 32 << 10, scrollback - 1, scrollback, scrollback + 7}[rnd.IntN(7)]
		p := make([]byte, n)
		for j := range p {
			p[j] = byte('a' + rnd.IntN(26))
		}
		r.write(p)
		all = append(all, p...)
		want := all[max(0, len(all)-scrollback):]
		if got := r.bytes(); !bytes.Equal(got, want) {
			t.Fatalf("after %d writes: ring holds %d bytes, want the last %d", i+1, len(got), len(want))
		}
	}
	// A cut inside a character starts at the next one.
	r = ring{}
	r.write(bytes.Repeat([]byte("é"), scrollback)) // 2 bytes each: the cut is odd after one more
	r.write([]byte("x"))
	if got := r.bytes(); got[0]&0xc0 == 0x80 {
		t.Fatalf("the replay starts inside a character: %x", got[:4])
	}
}

// TestInputQueueBound: input beyond inputMax is dropped, the client told
// once until the queue drains.
func TestInputQueueBound(t *testing.T) {
	q := newInputQueue()
	chunk := make([]byte, 4<<10)
	for i := 0; i < inputMax/len(chunk); i++ {
		if q.push(chunk) {
			t.Fatalf("chunk %d within the bound was refused", i)
		}
	}
	if !q.push(chunk) {
		t.Fatal("input past the bound was not refused with a notice")
	}
	if q.push(chunk) {
		t.Fatal("the notice was given twice")
	}
	if len(q.buf) != inputMax {
		t.Fatalf("%d bytes queued, want %d", len(q.buf), inputMax)
	}
}
