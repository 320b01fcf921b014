package gitguard

import (
	"fmt"
	"strings"
)

// entry is one key of a git config file: Key is section[.subsection].name
// with the section and the name lowercased (git compares them without
// case) and the subsection as written (git compares it with case, except
// in the legacy [section.sub] form, which it lowercases).
type entry struct {
	Key      string
	Value    string
	HasValue bool // "key" alone is a boolean true, with no value
	Line     int
}

func (e entry) String() string {
	if !e.HasValue {
		return e.Key
	}
	return fmt.Sprintf("%s = %q", e.Key, e.Value)
}

// section, subsection and name of e.Key.
func (e entry) parts() (section, sub, name string) {
	first := strings.IndexByte(e.Key, '.')
	last := strings.LastIndexByte(e.Key, '.')
	if first < 0 {
		return "", "", e.Key
	}
	if first == last {
		return e.Key[:first], "", e.Key[last+1:]
	}
	return e.Key[:first], e.Key[first+1 : last], e.Key[last+1:]
}

// parseConfig reads a git config file the way git's config.c does, as far
// as it matters to tell which keys the file sets. It returns the entries
// up to the first line it cannot parse, and an error naming that line: git
// refuses such a file, and so does the caller (it is quarantined).
func parseConfig(data []byte) ([]entry, error) {
	p := &configParser{s: string(data), line: 1}
	p.s = strings.TrimPrefix(p.s, "\xef\xbb\xbf") // git skips a UTF-8 BOM
	var out []entry
	var section string
	comment := false
	for {
		c, eof := p.next()
		switch {
		case c == '\n':
			if eof {
				return out, nil
			}
			comment = false
			continue
		case comment || isSpace(c):
			continue
		case c == '#' || c == ';':
			comment = true
			continue
		case c == '[':
			s, err := p.sectionHeader()
			if err != nil {
				return out, err
			}
			section = s
			continue // a key may follow on the same line: "[core] bare = true"
		case !isAlpha(c):
			return out, p.bad()
		}
		line := p.line
		e, err := p.keyValue(c)
		if err != nil {
			return out, err
		}
		if section != "" {
			e.Key = section + "." + e.Key
		}
		e.Line = line
		out = append(out, e)
	}
}

type configParser struct {
	s    string
	i    int
	line int
}

// next returns the next character, "\r\n" as "\n", and a final "\n" with
// eof set at the end of the input (git's get_next_char).
func (p *configParser) next() (c byte, eof bool) {
	if p.i >= len(p.s) {
		return '\n', true
	}
	c = p.s[p.i]
	p.i++
	if c == '\r' && p.i < len(p.s) && p.s[p.i] == '\n' {
		c = '\n'
		p.i++
	}
	if c == '\n' {
		p.line++
	}
	return c, false
}

func (p *configParser) bad() error {
	line := p.line
	if p.i > 0 && p.s[p.i-1] == '\n' {
		line-- // the newline that ended the bad line was read already
	}
	return fmt.Errorf("line %d cannot be parsed as git configuration", line)
}

// sectionHeader reads what follows "[": "name]", "name "sub"]" or the
// legacy "name.sub]", and returns the section as a key prefix.
func (p *configParser) sectionHeader() (string, error) {
	var b strings.Builder
	for {
		c, eof := p.next()
		switch {
		case eof:
			return "", p.bad()
		case isSpace(c):
			return p.subsection(b.String())
		case c == ']':
			if b.Len() == 0 {
				return "", p.bad()
			}
			return b.String(), nil
		case !isKeyChar(c) && c != '.':
			return "", p.bad()
		}
		b.WriteByte(lower(c))
	}
}

// subsection reads ` "sub"]` after a section name (git's
// get_extended_base_var): any character but a newline, with \x meaning x.
func (p *configParser) subsection(section string) (string, error) {
	c, _ := p.next()
	for isSpace(c) && c != '\n' {
		c, _ = p.next()
	}
	if c != '"' || section == "" {
		return "", p.bad()
	}
	var b strings.Builder
	for {
		c, eof := p.next()
		if eof || c == '\n' {
			return "", p.bad()
		}
		if c == '"' {
			break
		}
		if c == '\\' {
			if c, eof = p.next(); eof || c == '\n' {
				return "", p.bad()
			}
		}
		b.WriteByte(c)
	}
	if c, _ := p.next(); c != ']' {
		return "", p.bad()
	}
	return section + "." + b.String(), nil
}

// keyValue reads "name", "name = value" or "name =" from its first
// character c (git's get_value and parse_value).
func (p *configParser) keyValue(c byte) (entry, error) {
	var name strings.Builder
	name.WriteByte(lower(c))
	for {
		c, _ = p.next()
		if !isKeyChar(c) {
			break
		}
		name.WriteByte(lower(c))
	}
	for c == ' ' || c == '\t' {
		c, _ = p.next()
	}
	e := entry{Key: name.String()}
	if c == '\n' {
		return e, nil
	}
	if c != '=' {
		return e, p.bad()
	}
	v, err := p.value()
	e.Value, e.HasValue = v, true
	return e, err
}

// value reads a value up to the end of its line: quotes, the escapes
// \n \t \b \" \\, a backslash at the end of a line continuing it, and
// comments outside quotes; inner runs of blanks are kept, outer ones
// dropped.
func (p *configParser) value() (string, error) {
	var b strings.Builder
	quote, comment, space := false, false, 0
	for {
		c, _ := p.next()
		if c == '\n' {
			if quote {
				return "", p.bad()
			}
			return b.String(), nil
		}
		if comment {
			continue
		}
		if isSpace(c) && !quote {
			if b.Len() > 0 {
				space++
			}
			continue
		}
		if !quote && (c == ';' || c == '#') {
			comment = true
			continue
		}
		for ; space > 0; space-- {
			b.WriteByte(' ')
		}
		switch c {
		case '\\':
			c, _ = p.next()
			switch c {
			case '\n':
				continue
			case 't':
				c = '\t'
			case 'b':
				c = '\b'
			case 'n':
				c = '\n'
			case '\\', '"':
			default:
				return "", p.bad()
			}
		case '"':
			quote = !quote
			continue
		}
		b.WriteByte(c)
	}
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'
}
func isAlpha(c byte) bool   { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isKeyChar(c byte) bool { return isAlpha(c) || '0' <= c && c <= '9' || c == '-' }
func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
