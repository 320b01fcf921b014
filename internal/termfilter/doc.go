// Package termfilter removes the escape sequences that reach past the screen
// from a sandboxed command's terminal output, before it is written to the
// user's terminal.
//
// A terminal does more than draw: an escape sequence can set the user's
// clipboard (OSC 52), which the user then pastes into a host shell; make the
// terminal answer with text the command chose (a title report, CSI 21 t),
// which lands in whatever reads the terminal next — the host shell once the
// user detaches; post desktop notifications; transfer files or run commands
// of the terminal itself (iTerm2's OSC 1337, kitty's file transfer and
// remote control); redefine the user's function keys (DECUDK); or feed the
// terminal's image parsers (sixel, kitty graphics), a history of memory
// bugs. None of that belongs to drawing a TUI.
//
// # Using it
//
//	w := termfilter.NewWriter(os.Stdout)     // or:
//	var f termfilter.Filter
//	out = f.Append(out[:0], chunk)           // chunk by chunk, any split
//
// # How it decides
//
// The Filter is a state machine over the byte stream (the VT500 parser's
// states, trimmed) that holds at most the one sequence it is reading, up to
// maxSeq bytes, and never waits for more input to pass text on. It emits
// only two things: text (UTF-8 and C0 controls but ESC and ENQ) and whole
// sequences that it has read to their end, checked against the tables in
// rules.go, and rewritten in one canonical form (a string sequence ends in
// the terminator it came with, BEL or ESC \). So after every byte it emits,
// the terminal is back in its ground state, whatever it would have made of
// the bytes that were dropped: a dropped sequence is never half sent.
//
// Strings (OSC, DCS) and simple ESC sequences pass by allow list; CSI, whose
// parameters are only numbers, passes unless its final byte is on the deny
// list (window operations, title reports, the printer, screen checksums).
// What full-screen agent TUIs (Claude Code, Codex, OpenCode) and editors need
// passes: cursor and colour control, modes (alternate screen, mouse,
// bracketed paste, synchronized output, focus, the kitty keyboard protocol),
// titles, hyperlinks to http, https and file URLs, and the queries whose
// answers are fixed-format facts about the terminal (cursor position, device
// attributes, XTVERSION, DECRQM, colour queries, sizes). rules.go gives the
// reason for each entry.
//
// # Limits
//
// The filter assumes a UTF-8 terminal: it drops the 8-bit C1 controls that
// a UTF-8 terminal could act on (U+0080–U+009F, and stray bytes 0x80–0x9F),
// but a terminal set to an 8-bit character set acts on the bytes 0x80–0x9F
// inside valid UTF-8 text too, and those pass. The answers to the queries
// that pass still reach the command (the cursor position, the colours, the
// terminal's name and version).
package termfilter
