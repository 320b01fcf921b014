// Package termstate follows the modes a program's output sets on a
// terminal, so that they can be undone when the program lets go of it: a
// detach from a session, or a session whose command died without cleaning
// up. tmux does the same when a client detaches: it leaves the alternate
// screen, shows the cursor, resets the attributes and the scroll region,
// and turns off the mouse, focus and paste reporting the program asked for.
// Left on, those make the user's shell unusable: the screen stays the
// program's, clicks and window switches type escape sequences, pastes
// arrive wrapped.
//
// A State reads the bytes written to the terminal (Write) with a parser of
// the VT500 family's sequences, trimmed to what it tracks (modes.go), and
// keeps nothing of the text: a few booleans and counters. Undo returns the
// sequences that put back what changed; Detach adds a clean line for a
// message below whatever the program drew.
//
// # Limits
//
// It knows only what went through it: a mode set in output it did not see
// (the part of a session's output older than the replay on attach) is not
// undone. Where the program's drawing ends on the main screen is tracked
// by lines, not cells: after a program that placed its cursor absolutely
// there, Detach goes to the screen's last line, which may leave blank
// lines between the program's output and the message.
package termstate

import (
	"maps"
	"slices"
	"strconv"
)

// State is what a program's output has changed on the terminal.
type State struct {
	p parser

	dec      map[int]bool // DEC private modes changed from their default: the current value
	ansi     map[int]bool // ANSI modes set
	region   bool         // a scroll region is set (DECSTBM with margins)
	keypad   bool         // application keypad (DECKPAM, ESC =)
	cursor   bool         // a cursor style was chosen (DECSCUSR)
	pushed   int          // kitty keyboard flags pushed (CSI > n u) and not popped
	kitty    bool         // kitty keyboard flags set without a push (CSI = n u)
	modkeys  bool         // xterm modifyOtherKeys on (CSI > 4 ; n m)
	charset  bool         // a character set was designated (SCS) or shifted to (SO)
	wroteAny bool         // anything was written at all
	// unknown: the output held a sequence with more parameters than the
	// parser keeps, which a terminal may have acted on: Undo puts back
	// everything it knows of, and Detach goes to the last line.
	unknown bool

	// The cursor's line on the main screen, counted from where the
	// output started, and the lowest line it reached: nothing was drawn
	// lower. saved is the line DECSC saved. A line that wraps is not
	// counted (the model knows no columns): see Detach.
	row, lowest, saved int
	// placed: the cursor was placed on the main screen by an absolute
	// position (or a reset), and row means nothing.
	placed bool
	// midLine: the cursor is not at the start of its line on the main
	// screen (as far as the model knows: a move it does not follow
	// counts as mid-line). An attach starts at the start of a line: after
	// stockade's own lines, or the shell's after the command line.
	midLine, savedMid bool
}

// Write observes p, the next bytes written to the terminal. It never fails.
func (s *State) Write(p []byte) (int, error) {
	if len(p) > 0 {
		s.wroteAny = true
	}
	for _, b := range p {
		s.p.step(s, b)
	}
	return len(p), nil
}

// alt reports whether an alternate screen is on.
func (s *State) alt() bool {
	for _, m := range altScreens {
		if s.dec[m] {
			return true
		}
	}
	return false
}

// Undo returns the sequences that put back what the output changed, in an
// order that keeps each one meaningful: synchronized output ends first (or
// the terminal draws nothing of the rest), the scroll region is reset on
// the screen it was set on, the alternate screen is left last. The
// attributes are always reset: a program cut off mid-line leaves its
// colour on. Nothing written: nothing to undo.
func (s *State) Undo() []byte {
	if !s.wroteAny {
		return nil
	}
	if s.unknown {
		return s.everything().Undo()
	}
	var out []byte
	if s.dec[2026] {
		out = append(out, "\x1b[?2026l"...)
	}
	if s.dec[6] {
		out = append(out, "\x1b[?6l"...)
	}
	if s.region {
		if s.alt() {
			out = append(out, "\x1b[r"...) // homes the cursor, on a screen about to go
		} else {
			out = append(out, "\x1b7\x1b[r\x1b8"...)
		}
	}
	out = append(out, "\x1b[m"...)
	for _, n := range sortedKeys(s.ansi) {
		if s.ansi[n] {
			out = append(out, "\x1b["+strconv.Itoa(n)+"l"...)
		}
	}
	for _, n := range sortedKeys(s.dec) {
		if n == 2026 || n == 6 || isAlt(n) {
			continue
		}
		out = append(out, setDEC(n, decModes[n].on)...)
	}
	if s.keypad {
		out = append(out, "\x1b>"...)
	}
	if s.cursor {
		out = append(out, "\x1b[0 q"...)
	}
	if s.pushed > 0 {
		out = append(out, "\x1b[<"+strconv.Itoa(s.pushed)+"u"...)
	}
	if s.kitty {
		out = append(out, "\x1b[=0;1u"...)
	}
	if s.modkeys {
		out = append(out, "\x1b[>4m"...)
	}
	if s.charset {
		out = append(out, "\x1b(B\x1b)B\x0f"...) // ASCII in G0 and G1, and G0 shifted in
	}
	left := false
	for _, n := range altScreens {
		if s.dec[n] {
			out = append(out, setDEC(n, false)...)
			left = true
		}
	}
	if left {
		// Leaving 1049 restores what was saved on entry with the cursor,
		// the attributes and the character sets (xterm, tmux): an SGR 8
		// written just before entering would conceal what comes next.
		// They are reset again on the screen that stays. (Not origin
		// mode, which xterm restores too: turning it off homes the
		// cursor, and with the scroll region reset it changes nothing.)
		out = append(out, "\x1b[m\x1b(B\x1b)B\x0f"...)
		if s.region {
			out = append(out, "\x1b7\x1b[r\x1b8"...)
		}
	}
	return out
}

// everything is s with every mode it tracks changed, for an Undo that puts
// back all of them.
func (s *State) everything() *State {
	c := *s
	c.unknown, c.dec, c.ansi = false, map[int]bool{}, map[int]bool{}
	for n, m := range decModes {
		c.dec[n] = !m.on
	}
	for n := range ansiModes {
		c.ansi[n] = true
	}
	c.region, c.keypad, c.cursor, c.kitty, c.modkeys, c.charset = true, true, true, true, true, true
	return &c
}

// DetachAll is Detach for the outputs of one program that share a
// terminal (its stdout and its stderr): each one's modes are undone, then
// one move to a clean line for a message. Each State follows only its own
// output, and where the cursor is depends on what each did to the other's
// (a cursor saved by one and restored by the other): with more than one
// that wrote, the move is to the screen's last line and a new line below.
func DetachAll(ss ...*State) []byte {
	var wrote []*State
	for _, s := range ss {
		if s.wroteAny {
			wrote = append(wrote, s)
		}
	}
	switch len(wrote) {
	case 0:
		return nil
	case 1:
		return wrote[0].Detach()
	}
	var out []byte
	for _, s := range wrote {
		out = append(out, s.Undo()...)
	}
	return append(out, "\x1b[999;1H\r\n\x1b[J"...)
}

// Detach is Undo and then a move to the start of a clean line below what
// the program drew on the main screen, for a message: down to the lowest
// line the output reached (after an inline interface that moved its cursor
// up into its drawing), then a new line unless the cursor is at the start
// of the lowest line already, erased to the end of the screen
// (a line that wrapped, which the model does not count, is erased rather
// than written over). After a program that placed its cursor absolutely on
// the main screen, the lowest line is not known: the move is to the
// screen's last line.
func (s *State) Detach() []byte {
	out := s.Undo()
	below := s.lowest - s.row
	switch {
	case s.placed || s.unknown || s.dec[47] || s.dec[1047] || below > maxBelow:
		out = append(out, "\x1b[999;1H"...)
	case below > 0:
		out = append(out, "\x1b["+strconv.Itoa(below)+"B"...)
	case !s.midLine:
		return append(out, "\x1b[J"...) // on a line of its own already
	}
	return append(out, "\r\n\x1b[J"...)
}

// maxBelow is more lines than any terminal has.
const maxBelow = 999

func setDEC(n int, on bool) string {
	if on {
		return "\x1b[?" + strconv.Itoa(n) + "h"
	}
	return "\x1b[?" + strconv.Itoa(n) + "l"
}

func isAlt(n int) bool { return n == 47 || n == 1047 || n == 1049 }

func sortedKeys(m map[int]bool) []int { return slices.Sorted(maps.Keys(m)) }
