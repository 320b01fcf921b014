package termfilter

import (
	"io"
	"unicode/utf8"
)

// Plain turns a terminal's output into plain text, for reading a session's
// transcript as a log (`stockade logs --output --plain`). After the Filter
// has made every sequence whole, Plain removes:
//
//   - every escape sequence: colours and attributes, cursor movement,
//     modes (the alternate screen, the mouse), titles, hyperlinks (their
//     text stays), queries;
//   - C0 controls other than newline and tab (BEL, the shifts);
//   - a line redrawn over itself: text up to a carriage return that no
//     newline follows is dropped (a spinner, a progress bar keeps its last
//     state), and a backspace takes back the character before it;
//   - "\r\n" becomes "\n".
//
// A cursor placement (CSI H, f, d) or an erase of the screen (CSI J) ends
// the line being written, so a full-screen program's redraws read as lines
// of text, in the order they were drawn: what the screen showed at any one
// time is not rebuilt.
type Plain struct {
	f    Filter
	st   plainState
	cr   bool   // a carriage return was the last byte of the line
	line []byte // the line being written
}

type plainState uint8

const (
	plainText plainState = iota
	plainEsc
	plainCSI
	plainString
	plainStringEsc
)

// Append appends the plain text of src to dst; a line goes out once it
// ends (Flush gives the last, unfinished one).
func (p *Plain) Append(dst, src []byte) []byte {
	var buf [4096]byte
	for len(src) > 0 {
		n := min(len(src), 1024)
		for _, b := range p.f.Append(buf[:0], src[:n]) {
			dst = p.step(dst, b)
		}
		src = src[n:]
	}
	return dst
}

// Flush appends the unfinished last line, if any.
func (p *Plain) Flush(dst []byte) []byte {
	if len(p.line) > 0 && !p.cr {
		dst = append(append(dst, p.line...), '\n')
	}
	p.line, p.cr = p.line[:0], false
	return dst
}

func (p *Plain) endLine(dst []byte) []byte {
	dst = append(append(dst, p.line...), '\n')
	p.line, p.cr = p.line[:0], false
	return dst
}

func (p *Plain) step(dst []byte, b byte) []byte {
	switch p.st {
	case plainEsc:
		switch {
		case b == '[':
			p.st = plainCSI
		case b == ']' || b == 'P' || b == 'X' || b == '^' || b == '_':
			p.st = plainString
		case b >= 0x30 && b <= 0x7e:
			p.st = plainText
		}
		return dst
	case plainCSI:
		if b >= 0x40 && b <= 0x7e {
			p.st = plainText
			if (b == 'H' || b == 'f' || b == 'd' || b == 'J') && len(p.line) > 0 {
				dst = p.endLine(dst)
			}
		}
		return dst
	case plainString:
		switch b {
		case 0x07:
			p.st = plainText
		case 0x1b:
			p.st = plainStringEsc
		}
		return dst
	case plainStringEsc:
		p.st = plainText // ESC \ ends the string; the Filter lets nothing else through
		return dst
	}
	if p.cr && b != '\n' {
		p.line, p.cr = p.line[:0], false // the line is drawn over
	}
	switch {
	case b == 0x1b:
		p.st = plainEsc
	case b == '\n':
		dst = p.endLine(dst)
	case b == '\r':
		p.cr = true
	case b == '\b':
		if len(p.line) > 0 {
			_, n := utf8.DecodeLastRune(p.line)
			p.line = p.line[:len(p.line)-n]
		}
	case b == '\t' || b >= 0x20 && b != 0x7f:
		p.line = append(p.line, b)
	}
	return dst
}

// PlainWriter writes the plain text of what it is given to w; Close
// writes the unfinished last line.
type PlainWriter struct {
	w   io.Writer
	p   Plain
	buf []byte
}

// NewPlainWriter returns a PlainWriter to w.
func NewPlainWriter(w io.Writer) *PlainWriter { return &PlainWriter{w: w} }

func (w *PlainWriter) Write(b []byte) (int, error) {
	w.buf = w.p.Append(w.buf[:0], b)
	if _, err := w.w.Write(w.buf); err != nil {
		return 0, err
	}
	return len(b), nil
}

// Close writes the unfinished last line.
func (w *PlainWriter) Close() error {
	_, err := w.w.Write(w.p.Flush(nil))
	return err
}
