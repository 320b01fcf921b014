package termstate

// decMode is a DEC private mode (CSI ? n h sets it, CSI ? n l resets it)
// that a program may leave changed when it lets go of the terminal.
type decMode struct {
	// on is the mode's value on a terminal nobody has changed.
	on bool
	// why a terminal left with the mode changed is broken for the shell
	// that reads it next.
	why string
}

// decModes are the modes Undo puts back. The alternate screens (47, 1047,
// 1049) are here too, but Undo leaves them last and in its own way (see
// State.Undo); synchronized output (2026) first.
var decModes = map[int]decMode{
	1:    {false, "application cursor keys: the arrow keys send ESC O A, which a shell reads as text"},
	5:    {false, "reverse video: the whole screen is drawn inverted"},
	6:    {false, "origin mode: cursor positions count from the scroll region"},
	7:    {true, "autowrap off: long lines overwrite their last column"},
	9:    {false, "X10 mouse reporting: clicks arrive as text"},
	25:   {true, "the cursor is hidden"},
	47:   {false, "the alternate screen: the shell's screen stays hidden"},
	66:   {false, "application keypad: the keypad sends escape sequences"},
	69:   {false, "left and right margins (DECLRMM): with margins set (DECSLRM), text is squeezed between two columns"},
	1000: {false, "mouse reporting: clicks arrive as text"},
	1001: {false, "highlight mouse tracking"},
	1002: {false, "mouse drag reporting"},
	1003: {false, "mouse motion reporting: every move of the mouse arrives as text"},
	1004: {false, "focus reporting: switching windows types ESC [ I and ESC [ O"},
	1005: {false, "UTF-8 mouse encoding"},
	1006: {false, "SGR mouse encoding"},
	1015: {false, "urxvt mouse encoding"},
	1016: {false, "SGR pixel mouse encoding"},
	1047: {false, "the alternate screen"},
	1049: {false, "the alternate screen, with the cursor saved on entry"},
	2004: {false, "bracketed paste: every paste arrives wrapped in ESC [ 200 ~ … ESC [ 201 ~"},
	2026: {false, "synchronized output: the terminal stops drawing until the update ends"},
	2031: {false, "colour scheme reports: a theme change types a report"},
}

// altScreens are the alternate screen modes, in the order Undo leaves
// them: 1049 restores the cursor saved when it was entered.
var altScreens = []int{1049, 1047, 47}

// ansiModes are the ANSI modes (CSI n h / CSI n l) Undo resets.
var ansiModes = map[int]string{
	4:  "insert mode: text typed in the shell pushes the line right instead of overwriting",
	20: "newline mode: a line feed also returns the carriage",
}
