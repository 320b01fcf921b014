package termfilter

import (
	"fmt"
	"io"
	"strings"
	"unicode"
	"unicode/utf16"
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

// JSON returns b, JSON text, with every character Visible writes out as an
// escape that encoding/json leaves as it is (DEL, and past ASCII the C1
// controls, bidi controls, format and other invisible characters) written
// as a \u escape: the same value for a program that reads it, nothing a
// terminal acts on or hides for a user who reads it there. Such characters
// can only be in a string of b, where the escape means the same.
func JSON(b []byte) []byte {
	i := 0
	for i < len(b) {
		r, n := utf8.DecodeRune(b[i:])
		if jsonUnsafe(r) {
			break
		}
		i += n
	}
	if i == len(b) {
		return b
	}
	out := append([]byte(nil), b[:i]...)
	for i < len(b) {
		r, n := utf8.DecodeRune(b[i:])
		switch {
		case !jsonUnsafe(r):
			out = append(out, b[i:i+n]...)
		case r > 0xffff:
			r1, r2 := utf16.EncodeRune(r)
			out = fmt.Appendf(out, `\u%04x\u%04x`, r1, r2)
		default:
			out = fmt.Appendf(out, `\u%04x`, r)
		}
		i += n
	}
	return out
}

// jsonUnsafe: the C0 controls are encoding/json's to escape (in a string;
// outside one, newlines and tabs are JSON's white space), and a byte that
// is not UTF-8 it has made U+FFFD.
func jsonUnsafe(r rune) bool { return r >= 0x7f && r != utf8.RuneError && unsafeRune(r) }

// JSONWriter is a writer to w that writes what it is given through JSON:
// each Write must hold whole JSON values, as json.Encoder's do.
func JSONWriter(w io.Writer) io.Writer { return jsonWriter{w} }

type jsonWriter struct{ w io.Writer }

func (j jsonWriter) Write(p []byte) (int, error) {
	if _, err := j.w.Write(JSON(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}
