package termstate

import "strings"

// parser is the VT500 parser's state machine, trimmed to what State needs:
// ESC and CSI sequences are read to their end and acted on; strings (OSC,
// DCS, SOS, PM, APC) are skipped to their terminator; text is ignored.
type parser struct {
	state  pstate
	prefix byte  // CSI private marker: '?', '<', '=', '>' or 0
	inter  byte  // the last intermediate byte (0x20–0x2F), or 0
	params []int // CSI parameters; -1 where one was left empty
	cur    int   // the parameter being read, -1 while empty
	over   bool  // the sequence is too long to be one State acts on
	// tooMany: over because of its parameters' count, which a terminal
	// may still act on
	tooMany bool
	buf     [maxParams]int // params' backing array, so that a sequence allocates nothing
}

type pstate uint8

const (
	ground   pstate = iota
	escape          // after ESC
	escInter        // ESC and intermediates (ESC ( B, ESC # 8, …)
	csi             // CSI, reading the parameters
	str             // inside OSC, DCS, SOS, PM or APC, up to BEL or ST
)

// maxParams bounds a CSI's parameters; beyond, the sequence is ignored.
const maxParams = 16

func (p *parser) step(s *State, b byte) {
	switch b {
	case 0x1b: // ends a string (ESC \ is ST) or cuts a sequence short
		p.state = escape
		return
	case 0x18, 0x1a: // CAN, SUB abort any sequence
		p.state = ground
		return
	}
	switch p.state {
	case ground:
		s.control(b)
	case escape:
		p.escByte(s, b)
	case escInter:
		if b >= 0x30 && b <= 0x7e {
			p.state = ground // ESC ( B and the like: nothing State tracks
		}
	case csi:
		p.csiByte(s, b)
	case str:
		if b == 0x07 {
			p.state = ground
		}
	}
}

func (p *parser) escByte(s *State, b byte) {
	p.state = ground
	switch b {
	case '[':
		p.state, p.prefix, p.inter, p.params, p.cur, p.over, p.tooMany = csi, 0, 0, p.buf[:0], -1, false, false
	case ']', 'P', 'X', '^', '_':
		p.state = str
	case 'c': // RIS: the terminal is reset, and everything with it
		*s = State{p: s.p, wroteAny: true, placed: true}
	case '=':
		s.keypad = true
	case '>':
		s.keypad = false
	case 'D': // index
		s.down(1)
	case 'E': // next line
		s.down(1)
		s.column(true)
	case 'M': // reverse index
		s.down(-1)
	case '7':
		s.save()
	case '8':
		s.restore()
	default:
		if b >= 0x20 && b <= 0x2f {
			p.state = escInter
			// A character set designated (SCS: ESC ( 0 draws letters as
			// lines) outlives the program: Undo designates ASCII again.
			if strings.IndexByte("()*+-./,", b) >= 0 {
				s.charset = true
			}
		}
	}
}

func (p *parser) csiByte(s *State, b byte) {
	switch {
	case b < 0x20:
		s.control(b) // C0 controls are executed inside a CSI
	case b >= '0' && b <= '9':
		if p.inter != 0 {
			p.over = true
		}
		if p.cur < 0 {
			p.cur = 0
		}
		if p.cur < 1<<20 {
			p.cur = p.cur*10 + int(b-'0')
		}
	case b == ';' || b == ':':
		p.param()
	case b >= '<' && b <= '?':
		if len(p.params) > 0 || p.cur >= 0 || p.prefix != 0 || p.inter != 0 {
			p.over = true
		}
		p.prefix = b
	case b >= 0x20 && b <= 0x2f:
		p.inter = b
	case b >= 0x40 && b <= 0x7e:
		p.param()
		p.state = ground
		if !p.over {
			s.csi(p.prefix, p.inter, p.params, b)
		} else if p.tooMany {
			// A terminal may act on more parameters than are kept here
			// (tmux on 24, the first two of a scroll region): what the
			// sequence did is not known.
			s.unknown = true
		}
	default: // DEL and bytes above: ignored
	}
}

// param ends the parameter being read.
func (p *parser) param() {
	if len(p.params) == maxParams {
		p.over, p.tooMany = true, true
		return
	}
	p.params = append(p.params, p.cur)
	p.cur = -1
}

// arg is parameter i, or def where it is missing or empty.
func arg(params []int, i, def int) int {
	if i >= len(params) || params[i] < 0 {
		return def
	}
	return params[i]
}

// control acts on a text byte or a C0 control: the line feeds move down,
// a carriage return to the start of the line, text and tabs away from it.
func (s *State) control(b byte) {
	if b == 0x0e { // SO: G1 from now on, whatever the screen
		s.charset = true
	}
	switch {
	case s.alt():
	case b == '\n' || b == '\v' || b == '\f':
		s.down(1)
	case b == '\r':
		s.midLine = false
	case b == '\t' || b >= 0x20 && b != 0x7f:
		s.midLine = true
	}
}

// down moves the main screen's cursor n lines (up for n < 0). A move the
// terminal clamps at the screen's edge is counted whole: the count then
// overestimates how far below the cursor the drawing reaches, and
// Detach's move down is clamped the same way.
func (s *State) down(n int) {
	if s.alt() {
		return
	}
	s.row += n
	s.lowest = max(s.lowest, s.row)
}

// column notes a move to the start of the line (first), or elsewhere on it.
func (s *State) column(first bool) {
	if !s.alt() {
		s.midLine = !first
	}
}

func (s *State) save() {
	if !s.alt() {
		s.saved, s.savedMid = s.row, s.midLine
	}
}

func (s *State) restore() {
	if !s.alt() {
		s.row, s.midLine = s.saved, s.savedMid
	}
}

// place notes an absolute cursor position on the main screen.
func (s *State) place() {
	if !s.alt() {
		s.placed = true
	}
}

// csi acts on one whole CSI sequence.
func (s *State) csi(prefix, inter byte, params []int, final byte) {
	switch {
	case prefix == '?' && inter == 0 && (final == 'h' || final == 'l'):
		for _, n := range params {
			if _, ok := decModes[n]; ok {
				s.setDEC(n, final == 'h')
			}
		}
	case prefix == 0 && inter == 0 && (final == 'h' || final == 'l'):
		for _, n := range params {
			if _, ok := ansiModes[n]; ok {
				s.setANSI(n, final == 'h')
			}
		}
	case prefix == 0 && inter == 0 && final == 'r':
		top, bottom := arg(params, 0, 0), arg(params, 1, 0)
		s.region = top > 1 || bottom > 0
		s.place() // DECSTBM homes the cursor
	case prefix == 0 && inter == ' ' && final == 'q':
		s.cursor = arg(params, 0, 0) != 0
	case prefix == 0 && inter == '!' && final == 'p': // DECSTR, a soft reset
		for _, n := range []int{1, 6, 25, 66} {
			s.setDEC(n, decModes[n].on)
		}
		s.setANSI(4, false)
		s.region, s.keypad = false, false
	case prefix == '>' && inter == 0 && final == 'm' && arg(params, 0, -1) == 4:
		s.modkeys = arg(params, 1, 0) != 0
	case prefix == '>' && inter == 0 && final == 'n' && arg(params, 0, -1) == 4:
		s.modkeys = false
	case prefix == '>' && inter == 0 && final == 'u':
		s.pushed++
	case prefix == '<' && inter == 0 && final == 'u':
		s.pushed = max(0, s.pushed-max(1, arg(params, 0, 1)))
	case prefix == '=' && inter == 0 && final == 'u':
		if s.pushed == 0 {
			s.kitty = arg(params, 0, 0) != 0
		}
	case prefix == 0 && inter == 0:
		s.move(params, final)
	}
}

// move acts on the CSI sequences that move the cursor, or the lines under
// it, on the main screen.
func (s *State) move(params []int, final byte) {
	n := max(1, arg(params, 0, 1))
	switch final {
	case 'A': // up
		s.down(-n)
	case 'F': // previous line
		s.down(-n)
		s.column(true)
	case 'B', 'e': // down, line position relative
		s.down(n)
	case 'E': // next line
		s.down(n)
		s.column(true)
	case 'G', '`': // column absolute
		s.column(n == 1)
	case 'C', 'D', 'a', 'I', 'Z': // right, left, relative, tabs
		s.column(false)
	case 'S': // scroll up: the drawing moves up past the cursor
		s.down(n)
	case 'T': // scroll down: the drawing moves down past the cursor
		s.down(-n)
	case 'H', 'f', 'd':
		s.place()
	case 's':
		if len(params) == 1 && params[0] < 0 {
			s.save()
		}
	case 'u':
		if len(params) == 1 && params[0] < 0 {
			s.restore()
		}
	}
}

func (s *State) setDEC(n int, on bool) {
	if on == decModes[n].on {
		delete(s.dec, n)
		return
	}
	if s.dec == nil {
		s.dec = map[int]bool{}
	}
	s.dec[n] = on
}

func (s *State) setANSI(n int, on bool) {
	if !on {
		delete(s.ansi, n)
		return
	}
	if s.ansi == nil {
		s.ansi = map[int]bool{}
	}
	s.ansi[n] = true
}
