package termfilter

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Visible returns s with everything a terminal would act on, or that would
// make the text read other than it is, written out as an escape (\x1b,
// \u009b): C0 controls but tab, newlines among them (a name cannot forge a
// line of stockade's), DEL, the characters of hidden, and bytes that are
// not UTF-8. stockade prints names the
// sandboxed command chose (a file's path in an exit report, a key of a
// project's .stockaderc): "\x1b]52;c;…\a" in a file name set the user's
// clipboard when the report named it.
func Visible(s string) string {
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n <= 1 || unsafeRune(r) {
			break
		}
		i += n
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.WriteString(s[:i])
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unsafeRune(r) && r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r) && r > 0xffff:
			fmt.Fprintf(&b, `\U%08x`, r)
		case unsafeRune(r):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

// hidden are the characters past ASCII that a terminal acts on or shows as
// nothing, as the audit log's renderer has them: C1 controls, format
// characters (the bidi marks U+200E/F and U+061C, zero-width characters,
// U+FEFF), the line and paragraph separators, every bidi control, and the
// other default ignorable code points and variation selectors.
var hidden = []*unicode.RangeTable{unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp,
	unicode.Bidi_Control, unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector}

func unsafeRune(r rune) bool {
	if r < 0x80 {
		return r < 0x20 && r != '\t' || r == 0x7f
	}
	return unicode.In(r, hidden...)
}
