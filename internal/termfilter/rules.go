package termfilter

import (
	"bytes"
	"strconv"
)

// Class names what a dropped sequence was, for the log. The set is fixed,
// so that a stream cannot make a new log entry per sequence.
type Class string

const (
	ClassClipboard   Class = "clipboard access (OSC 52)"
	ClassTitleReport Class = "title report or window operation (CSI t)"
	ClassNotify      Class = "desktop notification (OSC 9, 99, 777)"
	ClassTerminalCmd Class = "terminal command or file transfer (OSC 7, 1337, 5113, ...)"
	ClassColourSet   Class = "colour change (OSC 4, 10-19 set)"
	ClassOSC         Class = "other OSC"
	ClassDCS         Class = "DCS (sixel, user-defined keys, passthrough, remote control, ...)"
	ClassAPC         Class = "APC, PM or SOS (kitty graphics, ...)"
	ClassCSI         Class = "CSI (printer, screen checksum, window resize, ...)"
	ClassESC         Class = "ESC (character set mode, 8-bit controls, ...)"
	ClassControl     Class = "control character (ENQ, C1)"
)

// keptESC are the ESC sequences (intermediates and final) that pass. All
// change only the screen or how keys are sent; charset designations are
// checked apart (escAllowed).
var keptESC = map[string]string{
	"7":  "DECSC save cursor",
	"8":  "DECRC restore cursor",
	"=":  "DECKPAM application keypad",
	">":  "DECKPNM normal keypad",
	"D":  "IND index",
	"E":  "NEL next line",
	"H":  "HTS set tab stop",
	"M":  "RI reverse index (scrolling up, used by every TUI)",
	"N":  "SS2",
	"O":  "SS3",
	"c":  "RIS full reset: puts the terminal back, never a risk",
	"n":  "LS2",
	"o":  "LS3",
	"|":  "LS3R",
	"}":  "LS2R",
	"~":  "LS1R",
	"6":  "DECBI back index",
	"9":  "DECFI forward index",
	"#3": "DECDHL double-height line, top",
	"#4": "DECDHL double-height line, bottom",
	"#5": "DECSWL single-width line",
	"#6": "DECDWL double-width line",
	"#8": "DECALN screen alignment test",
	" F": "S7C1T: answers in 7-bit controls",
	// Not kept, among others: ESC % (DOCS) leaves UTF-8, after which the
	// terminal reads bytes this filter passes as text as C1 controls;
	// ESC SP G (S8C1T) and the conformance levels; ESC Z (DECID), which
	// TUIs ask as CSI c; ESC k (screen and tmux window names, a string).
}

// escAllowed reports whether an ESC sequence (after the ESC) passes.
func escAllowed(s []byte) bool {
	if _, ok := keptESC[string(s)]; ok {
		return true
	}
	// Character set designation (SCS): one of ( ) * + - . / , an optional
	// second intermediate for 94- and 96-character sets (ESC ( % 5), and
	// the final. It changes which glyphs text shows, nothing else.
	switch len(s) {
	case 3:
		if s[1] < 0x21 || s[1] > 0x26 {
			return false
		}
		fallthrough
	case 2:
		return bytes.IndexByte([]byte("()*+-./"), s[0]) >= 0 && s[len(s)-1] >= 0x30
	}
	return false
}

// deniedCSI are the CSI sequences that never pass, by private marker,
// intermediates and final byte. Every other well-formed CSI passes: its
// parameters are numbers, so it cannot carry text of the command's choice,
// and the queries among them (DSR 6n cursor position and 5n status, DA1 c,
// DA2 >c, DA3 =c, XTVERSION >q, DECRQM $p, kitty keyboard ?u, XTQMODKEYS
// ?m) are answered in fixed formats that TUIs need: Claude Code (Ink),
// Codex (crossterm) and OpenCode (opentui) ask for the cursor position,
// the device attributes (also as the end marker of their other queries)
// and the keyboard protocol before they draw.
var deniedCSI = map[string]string{
	"t": "xterm window operations: iconify, move, resize, raise, and the title and icon reports (20 t, 21 t) whose " +
		"answer is text the command chose; only keptWindowOps pass",
	">t":  "XTSMTITLE: hex titles, and title reports in hex",
	">T":  "XTRMTITLE: resets the title modes",
	"i":   "MC media copy: printer controller mode sends the output to the host's print command",
	"?i":  "MC media copy, DEC form",
	"y":   "DECTST: invoke confidence tests",
	"*y":  "DECRQCRA: a checksum of a screen area, which reads the screen back cell by cell",
	"*|":  "DECSNLS: resizes the window",
	"$|":  "DECSCPP: resizes the window",
	"\"p": "DECSCL: conformance level, and 8-bit controls in answers",
	"$u":  "DECRQTSR: terminal state report, asked by no TUI",
	",q":  "DECTID: changes the terminal ID that DA answers with",
}

// keptWindowOps are the CSI Ps t operations that pass, by Ps.
var keptWindowOps = map[string]string{
	"14": "text area size in pixels: TUIs that size images ask it",
	"16": "cell size in pixels, idem",
	"18": "text area size in characters",
	"22": "push the title on the terminal's stack (restored by 23 when the TUI exits)",
	"23": "pop the title",
}

// csiAllowed checks a CSI sequence after ESC [: an optional private marker
// (< = > ?), parameters (0-9 : ;), intermediates (0x20–0x2F), the final.
// Anything else is malformed, and dropped.
func csiAllowed(s []byte) (bool, Class) {
	final := s[len(s)-1]
	s = s[:len(s)-1]
	var key [8]byte // marker, intermediates, final: the deniedCSI key
	n := 0
	if len(s) > 0 && s[0] >= '<' && s[0] <= '?' {
		key[0], n, s = s[0], 1, s[1:]
	}
	p := 0
	for p < len(s) && s[p] >= '0' && s[p] <= ';' {
		p++
	}
	params, inter := s[:p], s[p:]
	if len(inter) > len(key)-2 {
		return false, ClassCSI
	}
	for _, b := range inter {
		if b < 0x20 || b > 0x2f {
			return false, ClassCSI
		}
		key[n], n = b, n+1
	}
	key[n], n = final, n+1
	if n == 1 && final == 't' {
		first, _, _ := bytes.Cut(params, []byte(";"))
		if _, ok := keptWindowOps[string(first)]; ok {
			return true, ""
		}
		return false, ClassTitleReport
	}
	if _, denied := deniedCSI[string(key[:n])]; denied {
		return false, ClassCSI
	}
	return true, ""
}

// oscRule checks the text of an OSC after "N;" (nil: no text allowed).
type oscRule struct {
	why   string
	check func(text []byte, hasText bool) bool
}

// keptOSC are the OSC commands that pass, by number. Every other OSC is
// dropped, among them: 52 clipboard set and query; 7 working directory
// (sets where new host tabs open); 9 notifications (all but progress), 99
// and 777 notifications, whose text the user reads as the system's; 1337
// (iTerm2: files, user variables, commands of the terminal); 5113 (kitty
// file transfer); 5522 (kitty clipboard); 50 (fonts); 46 (xterm log file);
// 133 and 633 (shell integration); and colour changes (4, 10-19 set), which
// outlive the session and can hide the host shell's text.
var keptOSC = map[int]oscRule{
	0:   {"icon name and window title: Claude Code and Codex show their state there", title},
	1:   {"icon name", title},
	2:   {"window title", title},
	4:   {"palette colour query (only ? specs): OpenCode reads the palette to match its theme", paletteQuery},
	8:   {"hyperlink, to http, https or file URLs only: Claude Code links files and URLs", hyperlink},
	9:   {"progress bar (9;4 only, ConEmu form): Claude Code reports progress with it", progress},
	10:  {"foreground colour query (only ?): TUIs tell light from dark themes by it", colourQuery},
	11:  {"background colour query (only ?): idem", colourQuery},
	12:  {"cursor colour query (only ?)", colourQuery},
	104: {"reset palette colours", numbers},
	110: {"reset foreground colour", numbers},
	111: {"reset background colour", numbers},
	112: {"reset cursor colour", numbers},
}

// droppedOSC gives the class of the dropped OSC commands the log names.
var droppedOSC = map[int]Class{
	52: ClassClipboard, 5522: ClassClipboard,
	9: ClassNotify, 99: ClassNotify, 777: ClassNotify,
	7: ClassTerminalCmd, 1337: ClassTerminalCmd, 5113: ClassTerminalCmd, 50: ClassTerminalCmd, 46: ClassTerminalCmd,
	4: ClassColourSet, 10: ClassColourSet, 11: ClassColourSet, 12: ClassColourSet, 13: ClassColourSet,
	14: ClassColourSet, 15: ClassColourSet, 16: ClassColourSet, 17: ClassColourSet, 18: ClassColourSet, 19: ClassColourSet,
}

// oscNumber parses the command number of an OSC.
func oscNumber(s []byte) (int, bool) {
	if len(s) == 0 || len(s) > 5 {
		return 0, false
	}
	n, err := strconv.Atoi(string(s))
	return n, err == nil && s[0] != '+' && s[0] != '-'
}

func oscClass(n int) Class {
	if c, ok := droppedOSC[n]; ok {
		return c
	}
	return ClassOSC
}

// oscNumberAllowed reports whether an OSC with this command number can
// pass at all, so that one that cannot is not collected.
func oscNumberAllowed(num []byte) (bool, Class) {
	n, ok := oscNumber(num)
	if !ok {
		return false, ClassOSC
	}
	if _, kept := keptOSC[n]; !kept {
		return false, oscClass(n)
	}
	return true, ""
}

// oscAllowed checks a whole OSC after ESC ].
func oscAllowed(s []byte) (bool, Class) {
	num, text, hasText := bytes.Cut(s, []byte(";"))
	n, ok := oscNumber(num)
	if !ok {
		return false, ClassOSC
	}
	rule, kept := keptOSC[n]
	if !kept || !rule.check(text, hasText) {
		return false, oscClass(n)
	}
	return true, ""
}

// title: any text; the filter has already dropped C0 and C1 controls from
// it and checked that it is UTF-8. Only the reports could make a title
// dangerous, and those are dropped (CSI 20 t, 21 t, XTSMTITLE). A title can
// still say anything: the window title is no place for a trusted prompt.
func title(text []byte, hasText bool) bool { return true }

func colourQuery(text []byte, hasText bool) bool {
	if !hasText {
		return false
	}
	for spec := range bytes.SplitSeq(text, []byte(";")) {
		if string(spec) != "?" {
			return false
		}
	}
	return true
}

// paletteQuery: index;?(;index;?)*.
func paletteQuery(text []byte, hasText bool) bool {
	parts := bytes.Split(text, []byte(";"))
	if !hasText || len(parts)%2 != 0 {
		return false
	}
	for i := 0; i < len(parts); i += 2 {
		if !digits(parts[i]) || string(parts[i+1]) != "?" {
			return false
		}
	}
	return true
}

// numbers: nothing, or numbers and ;.
func numbers(text []byte, hasText bool) bool {
	for _, b := range text {
		if (b < '0' || b > '9') && b != ';' {
			return false
		}
	}
	return true
}

// progress: 9;4[;state[;percent]].
func progress(text []byte, hasText bool) bool {
	parts := bytes.Split(text, []byte(";"))
	if !hasText || len(parts) > 3 || string(parts[0]) != "4" {
		return false
	}
	for _, p := range parts[1:] {
		if !digits(p) || len(p) > 3 {
			return false
		}
	}
	return true
}

// hyperlinkSchemes are the URL schemes an OSC 8 link may have. Others open
// handlers of the host that act (vscode:, ssh:, ms-*, x-man-page:, custom
// schemes that clone, install or run), all on a click on text that shows
// something else.
var hyperlinkSchemes = []string{"http", "https", "file"}

// hyperlink: params;URI, params key=value pairs without ;, the URI empty
// (the end of a link) or printable ASCII without spaces, as URIs are.
func hyperlink(text []byte, hasText bool) bool {
	params, uri, ok := bytes.Cut(text, []byte(";"))
	if !ok || !printableASCII(params) || !printableASCII(uri) {
		return false
	}
	if len(uri) == 0 {
		return true
	}
	scheme, _, ok := bytes.Cut(uri, []byte(":"))
	if !ok {
		return false
	}
	for _, s := range hyperlinkSchemes {
		if string(bytes.ToLower(scheme)) == s {
			return true
		}
	}
	return false
}

// dcsAllowed checks the header of a DCS (after ESC P, to the final byte).
func dcsAllowed(head []byte) bool {
	_, ok := keptDCS[string(head)]
	return ok
}

// keptDCS are the DCS sequences that pass, by header. Every other DCS is
// dropped: sixel and ReGIS (image parsers, CVE-2022-24130), DECUDK (user-
// defined keys: the user's function keys would type the command's text
// into the host shell later), DECDLD (fonts), DECRSPS and DECRSTS (restore
// state), XTSETTCAP, tmux and screen passthrough ("tmux;": raw sequences to
// the terminal behind the multiplexer, past its own filter), iTerm2's tmux
// integration (1000p), kitty remote control (@kitty-cmd).
var keptDCS = map[string]dcsRule{
	"$q": {"DECRQSS: what a setting is now (SGR, margins, cursor style); vim and neovim ask", decrqss},
	"+q": {"XTGETTCAP: terminfo capabilities, names in hex; neovim and opentui ask", hexNames},
	"=1s": {"begin synchronized update, the DCS form (iTerm2); CSI ? 2026 h is the common one",
		func(data []byte) bool { return len(data) == 0 }},
	"=2s": {"end synchronized update", func(data []byte) bool { return len(data) == 0 }},
}

type dcsRule struct {
	why   string
	check func(data []byte) bool
}

// keptDECRQSS are the settings DECRQSS may ask about. The answer is the
// setting's value; an unknown request got its text echoed back in old
// xterms (CVE-2008-2383), so only known names pass.
var keptDECRQSS = map[string]string{
	"m":   "SGR",
	"r":   "DECSTBM top and bottom margins",
	"s":   "DECSLRM left and right margins",
	"t":   "DECSLPP lines per page",
	" q":  "DECSCUSR cursor style",
	"\"p": "DECSCL conformance level",
	"\"q": "DECSCA protection attribute",
	"*|":  "DECSNLS lines per screen",
	"$|":  "DECSCPP columns per page",
}

func decrqss(data []byte) bool {
	_, ok := keptDECRQSS[string(data)]
	return ok
}

// hexNames: capability names in hex, separated by ;. The answer echoes
// them in hex: nothing a shell would run.
func hexNames(data []byte) bool {
	if len(data) == 0 || len(data) > 256 {
		return false
	}
	for _, b := range data {
		if !(b >= '0' && b <= '9' || b >= 'a' && b <= 'f' || b >= 'A' && b <= 'F' || b == ';') {
			return false
		}
	}
	return true
}

// dcsDataAllowed checks a whole DCS after ESC P: header, final, data.
func dcsDataAllowed(s []byte) bool {
	i := 0
	for i < len(s) && s[i] < 0x40 {
		i++
	}
	if i == len(s) {
		return false
	}
	rule, ok := keptDCS[string(s[:i+1])]
	return ok && rule.check(s[i+1:])
}

func digits(s []byte) bool {
	for _, b := range s {
		if b < '0' || b > '9' {
			return false
		}
	}
	return len(s) > 0 && len(s) <= 5
}

func printableASCII(s []byte) bool {
	for _, b := range s {
		if b <= ' ' || b >= del {
			return false
		}
	}
	return true
}
