package termfilter

import (
	"bytes"
	"io"
)

// Control bytes the state machine acts on.
const (
	bel = 0x07
	enq = 0x05
	can = 0x18
	sub = 0x1a
	esc = 0x1b
	del = 0x7f
	st8 = 0x9c // ST as a C1 control (U+009C, encoded C2 9C)
)

// Length limits. A sequence that grows past its limit is dropped whole:
// none of the sequences that pass comes near them.
const (
	maxSeq     = 4096 // an OSC or DCS, introducer included (hyperlinks are the longest)
	maxCSI     = 256  // a CSI sequence: SGR with many colours stays far below
	maxDCSHead = 32   // the parameters and intermediates of a DCS
)

type state uint8

// The states, in the order a sequence goes through them.
const (
	ground   state = iota // text
	escape                // after ESC
	escInter              // ESC and intermediates (0x20–0x2F)
	csiBody               // ESC [ and parameters, intermediates
	dcsHead               // ESC P and parameters, intermediates
	str                   // the data of an OSC or DCS, or a string being dropped
	strEsc                // ESC inside a string: ST, or the start of the next sequence
)

// Filter removes dangerous escape sequences from one terminal output stream
// (see the package doc). The zero value is ready to use; a Filter is not safe
// for use by more than one goroutine at a time.
type Filter struct {
	// Dropped, when set, is called with the class of every sequence the
	// filter drops, from the goroutine that calls Append.
	Dropped func(Class)

	st      state
	seq     []byte    // the sequence being read, from its ESC
	u       utf8State // in ground text and string data
	heldC2  bool      // ground: a C2 byte, which may start a C1 control
	keep    bool      // str: the string is collected; false: it is being dropped
	class   Class     // str: why it is dropped
	ignored bool      // csiBody: over maxCSI, dropped at its final byte
}

// Append filters src and appends what may reach the terminal to dst.
func (f *Filter) Append(dst, src []byte) []byte {
	for i := 0; i < len(src); i++ {
		if f.st == ground && f.u.need == 0 && !f.heldC2 {
			// The common case: a run of plain text goes out at once.
			j := i
			for j < len(src) && src[j] < 0x80 && src[j] != esc && src[j] != enq {
				j++
			}
			dst = append(dst, src[i:j]...)
			if i = j; i == len(src) {
				break
			}
		}
		dst = f.step(dst, src[i])
	}
	return dst
}

func (f *Filter) step(dst []byte, b byte) []byte {
	switch f.st {
	case ground:
		return f.text(dst, b)
	case escape, escInter:
		return f.escByte(dst, b)
	case csiBody:
		return f.csiByte(dst, b)
	case dcsHead:
		return f.dcsHeadByte(dst, b)
	case str:
		return f.strByte(dst, b)
	case strEsc:
		return f.strEscByte(dst, b)
	}
	return dst
}

// text handles a byte in the ground state.
func (f *Filter) text(dst []byte, b byte) []byte {
	k := f.u.next(b)
	if f.heldC2 && k != utf8Cont && k != utf8C1 {
		f.heldC2 = false // a lone C2: nothing a terminal would act on, dropped
	}
	switch k {
	case utf8ASCII:
		switch b {
		case esc:
			f.begin()
			return dst
		case enq: // answerback: a reply the command did not need to ask for
			f.drop(ClassControl)
			return dst
		}
	case utf8Lead:
		if b == 0xc2 { // C2 80–9F encodes a C1 control: wait for the next byte
			f.heldC2 = true
			return dst
		}
	case utf8Cont:
		if f.heldC2 {
			f.heldC2 = false
			dst = append(dst, 0xc2)
		}
	case utf8C1:
		// CSI, OSC, DCS, ST and the rest as one code point: a UTF-8
		// terminal may act on them like on their ESC forms. Dropping the
		// introducer leaves what follows as plain text.
		f.heldC2 = false
		f.drop(ClassControl)
		return dst
	case utf8Stray:
		if b <= 0x9f { // a C1 control to a terminal that reads 8-bit controls
			f.drop(ClassControl)
			return dst
		}
	}
	return append(dst, b)
}

// begin starts a sequence at an ESC.
func (f *Filter) begin() {
	f.st, f.seq, f.u, f.ignored = escape, append(f.seq[:0], esc), utf8State{}, false
}

// control handles a C0 control, DEL or non-ASCII byte met inside ESC, CSI
// and DCS headers, as the VT500 parser does: ESC restarts, CAN and SUB
// abort, other C0 controls are executed where they stand (so they go out
// now, before the sequence), DEL is ignored. A byte from 0x80 up aborts the
// sequence and is read again as text. It reports whether b was one of them.
func (f *Filter) control(dst []byte, b byte, execute bool) ([]byte, bool) {
	switch {
	case b == esc:
		f.begin()
	case b == can || b == sub:
		f.st = ground
	case b < 0x20:
		if execute && b != enq {
			dst = append(dst, b)
		}
	case b == del:
	case b >= 0x80:
		f.st = ground
		dst = f.text(dst, b)
	default:
		return dst, false
	}
	return dst, true
}

func (f *Filter) escByte(dst []byte, b byte) []byte {
	if dst, ok := f.control(dst, b, true); ok {
		return dst
	}
	if f.st == escape {
		switch b {
		case '[':
			f.st, f.seq = csiBody, append(f.seq, b)
			return dst
		case ']':
			f.startString(true, "")
			f.seq = append(f.seq, b)
			return dst
		case 'P':
			f.st, f.seq = dcsHead, append(f.seq, b)
			return dst
		case 'X', '^', '_': // SOS, PM, APC: never passed
			f.startString(false, ClassAPC)
			return dst
		}
	}
	f.seq = append(f.seq, b)
	if b < 0x30 { // an intermediate
		f.st = escInter
		if len(f.seq) > 8 {
			f.st = ground // no such sequence; the terminal would print the rest
			f.drop(ClassESC)
		}
		return dst
	}
	f.st = ground
	if escAllowed(f.seq[1:]) {
		return append(dst, f.seq...)
	}
	f.drop(ClassESC)
	return dst
}

func (f *Filter) csiByte(dst []byte, b byte) []byte {
	if dst, ok := f.control(dst, b, true); ok {
		return dst
	}
	if len(f.seq) >= maxCSI {
		f.ignored = true
	} else {
		f.seq = append(f.seq, b)
	}
	if b < 0x40 { // a parameter or intermediate
		return dst
	}
	f.st = ground
	if f.ignored {
		f.drop(ClassCSI)
		return dst
	}
	if ok, class := csiAllowed(f.seq[2:]); !ok {
		f.drop(class)
		return dst
	}
	return append(dst, f.seq...)
}

func (f *Filter) dcsHeadByte(dst []byte, b byte) []byte {
	// C0 controls are ignored in a DCS header, not executed.
	if dst, ok := f.control(dst, b, false); ok {
		return dst
	}
	f.seq = append(f.seq, b)
	switch {
	case len(f.seq) > maxDCSHead:
		f.startString(false, ClassDCS)
	case b >= 0x40: // the final byte: the data follows
		if dcsAllowed(f.seq[2:]) {
			f.startString(true, "")
		} else {
			f.startString(false, ClassDCS)
		}
	}
	return dst
}

// startString reads the data of a string sequence: collected when keep,
// else dropped (as class) up to its end.
func (f *Filter) startString(keep bool, class Class) {
	f.st, f.keep, f.class, f.u = str, keep, class, utf8State{}
}

// discard turns the string being collected into one being dropped.
func (f *Filter) discard(class Class) {
	f.keep, f.class = false, class
}

func (f *Filter) strByte(dst []byte, b byte) []byte {
	switch {
	case b == bel:
		return f.endString(dst, bel)
	case b == esc:
		f.st = strEsc
		return dst
	case b == can || b == sub: // aborts the string: nothing of it is sent
		f.st = ground
		if !f.keep {
			f.drop(f.class)
		}
		return dst
	case b < 0x20 || b == del: // ignored inside a string
		return dst
	}
	switch f.u.next(b) {
	case utf8C1:
		if b == st8 {
			if f.keep { // the C2 went in before it could be told apart
				f.seq = f.seq[:len(f.seq)-1]
			}
			return f.endString(dst, st8)
		}
		f.discard(f.stringClass())
		return dst
	case utf8Stray:
		f.discard(f.stringClass())
		return dst
	}
	if !f.keep {
		return dst
	}
	if len(f.seq) >= maxSeq {
		f.discard(f.stringClass())
		return dst
	}
	f.seq = append(f.seq, b)
	if f.seq[1] == ']' && b == ';' && bytes.IndexByte(f.seq[2:len(f.seq)-1], ';') < 0 {
		// The command number is known: an OSC that cannot pass is not
		// collected any further (a clipboard payload can be megabytes).
		if ok, class := oscNumberAllowed(f.seq[2 : len(f.seq)-1]); !ok {
			f.discard(class)
		}
	}
	return dst
}

func (f *Filter) strEscByte(dst []byte, b byte) []byte {
	if b == '\\' {
		f.st = str
		return f.endString(dst, esc)
	}
	// Any other byte ends the string and starts the next sequence, which
	// is read from this byte on.
	dst = f.endString(dst, esc)
	f.begin()
	return f.escByte(dst, b)
}

// stringClass is the class a dropped string is counted as.
func (f *Filter) stringClass() Class {
	if f.class != "" {
		return f.class
	}
	if len(f.seq) > 1 && f.seq[1] == 'P' {
		return ClassDCS
	}
	return ClassOSC
}

// endString ends the string at its terminator (bel, esc for ESC \, or st8)
// and sends it on when it passes, in canonical form: an OSC that ended in
// BEL keeps BEL (a query's answer uses the terminator of its question),
// every other one ends in ESC \.
func (f *Filter) endString(dst []byte, term byte) []byte {
	f.st = ground
	if !f.keep {
		f.drop(f.class)
		return dst
	}
	ok, class := false, ClassDCS
	if f.u.need == 0 { // no character left half-written
		if f.seq[1] == ']' {
			ok, class = oscAllowed(f.seq[2:])
		} else {
			ok = dcsDataAllowed(f.seq[2:])
		}
	} else if f.seq[1] == ']' {
		class = ClassOSC
	}
	if !ok {
		f.drop(class)
		return dst
	}
	dst = append(dst, f.seq...)
	if term == bel && f.seq[1] == ']' {
		return append(dst, bel)
	}
	return append(dst, esc, '\\')
}

func (f *Filter) drop(c Class) {
	if f.Dropped != nil {
		f.Dropped(c)
	}
}

// Writer filters what is written to it before writing it on.
type Writer struct {
	w   io.Writer
	f   Filter
	buf []byte
}

// NewWriter returns a Writer that writes to w what passes the filter.
// dropped, when not nil, is called with the class of every dropped sequence.
func NewWriter(w io.Writer, dropped func(Class)) *Writer {
	return &Writer{w: w, f: Filter{Dropped: dropped}}
}

// Write filters p and writes the result. It reports len(p) written unless
// the underlying write fails: a held sequence is part of what was taken.
func (w *Writer) Write(p []byte) (int, error) {
	w.buf = w.f.Append(w.buf[:0], p)
	if len(w.buf) == 0 {
		return len(p), nil
	}
	if _, err := w.w.Write(w.buf); err != nil {
		return 0, err
	}
	if cap(w.buf) > 64<<10 {
		w.buf = nil // one large write must not pin a large buffer
	}
	return len(p), nil
}
