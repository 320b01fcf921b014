package termfilter

// byteKind is what a byte is in a UTF-8 stream.
type byteKind uint8

const (
	utf8ASCII byteKind = iota // below 0x80
	utf8Lead                  // starts a well-formed sequence
	utf8Cont                  // continues one
	utf8C1                    // ends C2 80–9F: a C1 control, U+0080–U+009F
	utf8Stray                 // fits nowhere: 80–C1 or F5–FF out of place
)

// utf8State tracks where a stream is inside a UTF-8 sequence, by the
// well-formed byte sequences of Unicode (Table 3-7), the way a terminal's
// decoder reads it: a byte that does not continue a sequence ends it and is
// read afresh.
type utf8State struct {
	need   int  // continuation bytes still expected
	lo, hi byte // the range of the next one
	lead   byte
}

func (u *utf8State) next(b byte) byteKind {
	if u.need > 0 {
		if b >= u.lo && b <= u.hi {
			u.need--
			c1 := u.lead == 0xc2 && b <= 0x9f
			u.lo, u.hi = 0x80, 0xbf
			if c1 {
				return utf8C1
			}
			return utf8Cont
		}
		u.need = 0
	}
	switch {
	case b < 0x80:
		return utf8ASCII
	case b >= 0xc2 && b <= 0xdf:
		u.need, u.lo, u.hi = 1, 0x80, 0xbf
	case b == 0xe0:
		u.need, u.lo, u.hi = 2, 0xa0, 0xbf // no overlong forms
	case b == 0xed:
		u.need, u.lo, u.hi = 2, 0x80, 0x9f // no surrogates
	case b >= 0xe1 && b <= 0xef:
		u.need, u.lo, u.hi = 2, 0x80, 0xbf
	case b == 0xf0:
		u.need, u.lo, u.hi = 3, 0x90, 0xbf
	case b >= 0xf1 && b <= 0xf3:
		u.need, u.lo, u.hi = 3, 0x80, 0xbf
	case b == 0xf4:
		u.need, u.lo, u.hi = 3, 0x80, 0x8f // nothing above U+10FFFF
	default:
		return utf8Stray
	}
	u.lead = b
	return utf8Lead
}
