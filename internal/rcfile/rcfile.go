// Package rcfile reads stockaderc files: the files that hold the real API
// keys the auth proxy injects (docs/authproxy.md). They never enter the sandbox.
//
// Three files are read, each optional, and merged with the host environment
// (later wins):
//
//	host environment < $XDG_CONFIG_HOME/stockade/stockaderc < <project>/.stockaderc < --env-file
//
// so a project's file overrides the global one, and --env-file overrides both.
//
// # Format
//
//	# a comment
//	ANTHROPIC_API_KEY=sk-ant-...        # a trailing comment (after a space or tab)
//	export OPENAI_API_KEY=sk-...        # "export " is allowed and ignored
//	GEMINI_API_KEY='literal: no escapes, # is not a comment here'
//	XAI_API_KEY="double quotes: \" \\ \n \t are escapes"
//	EMPTY=
//
// Names are [A-Za-z_][A-Za-z0-9_]*. Unquoted values are trimmed and end at
// " #" or "\t#"; a # that is not after a blank is part of the value
// (KEY=a#b is "a#b"). A quoted value must close on the same line and only a
// comment may follow it: values never span lines, so a parsed value contains
// a newline only when it was written as \n in double quotes. In double
// quotes a backslash before any other character is kept as written
// ("C:\tmp" is C, :, tab, m, p, but "C:\dir" is C:\dir). A UTF-8 byte order
// mark and CRLF line ends are accepted. When a name appears twice, the last
// value wins.
//
// Errors name the file and line and say how to fix it; they never show the
// value, which may be a secret.
package rcfile

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// ProjectFile is the name of a project's rc file, at the top of its workdir.
const ProjectFile = ".stockaderc"

// maxLine bounds one line; a longer one is an error, not a silent split.
const maxLine = 1 << 20

// Error is a line that could not be parsed. Its message never contains the
// line's value.
type Error struct {
	File string
	Line int
	Msg  string // what is wrong
	Fix  string // what to write instead
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s:%d: %s; fix: %s", e.File, e.Line, e.Msg, e.Fix)
}

// GlobalPath returns $XDG_CONFIG_HOME/stockade/stockaderc (or the
// ~/.config fallback).
func GlobalPath() (string, error) {
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("finding the stockaderc directory: %w", err)
	}
	return filepath.Join(dir, "stockade", "stockaderc"), nil
}

// Load parses the file at path. A file that does not exist is an empty map
// and no error: every rc file is optional.
func Load(path string) (map[string]string, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return map[string]string{}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading stockaderc: %w", err)
	}
	defer f.Close()
	return Parse(f, path)
}

// Parse reads KEY=VALUE lines from r; name is the file name used in errors.
// It stops at the first invalid line.
func Parse(r io.Reader, name string) (map[string]string, error) {
	out := map[string]string{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 4096), maxLine)
	for n := 1; sc.Scan(); n++ {
		line := sc.Bytes()
		if n == 1 {
			line = bytes.TrimPrefix(line, []byte("\ufeff"))
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		key, val, ok, err := parseLine(string(line))
		if err != nil {
			err.File, err.Line = name, n
			return nil, err
		}
		if ok {
			out[key] = val
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, fmt.Errorf("reading %s: a line is longer than %d bytes: %w", name, maxLine, err)
		}
		return nil, fmt.Errorf("reading %s: %w", name, err)
	}
	return out, nil
}

// Merge returns the union of layers; for a name set in several, the last
// layer wins. Pass them in order host env, global, project, --env-file.
func Merge(layers ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, l := range layers {
		for k, v := range l {
			out[k] = v
		}
	}
	return out
}

// parseLine parses one line without its line end. ok is false for blank
// and comment lines. The returned Error has no File or Line yet.
func parseLine(line string) (key, val string, ok bool, err *Error) {
	s := strings.TrimLeft(line, " \t")
	if s == "" || s[0] == '#' {
		return "", "", false, nil
	}
	if rest, found := strings.CutPrefix(s, "export"); found && rest != "" && (rest[0] == ' ' || rest[0] == '\t') {
		s = strings.TrimLeft(rest, " \t")
	}
	key, raw, found := strings.Cut(s, "=")
	if !found {
		return "", "", false, &Error{Msg: "not a KEY=VALUE line", Fix: "write NAME=value, or start the line with # to make it a comment"}
	}
	key = strings.TrimRight(key, " \t")
	if !validName(key) {
		return "", "", false, &Error{Msg: "invalid name before =", Fix: "use letters, digits and _ only, not starting with a digit (e.g. ANTHROPIC_API_KEY=…)"}
	}
	val, err = parseValue(raw)
	if err != nil {
		return "", "", false, err
	}
	return key, val, true, nil
}

func validName(s string) bool {
	if s == "" || s[0] >= '0' && s[0] <= '9' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// parseValue parses what follows the first =.
func parseValue(raw string) (string, *Error) {
	s := strings.TrimLeft(raw, " \t")
	if s == "" {
		return "", nil
	}
	switch s[0] {
	case '\'':
		end := strings.IndexByte(s[1:], '\'')
		if end < 0 {
			return "", &Error{Msg: "single quote not closed", Fix: "close the quote on the same line (values cannot span lines)"}
		}
		return s[1 : 1+end], afterQuote(s[2+end:])
	case '"':
		return parseDouble(s[1:])
	}
	// Unquoted: a # after a blank starts a comment. raw, not s, so that
	// "KEY= #c" (a blank right after =) is an empty value.
	for i := 1; i < len(raw); i++ {
		if raw[i] == '#' && (raw[i-1] == ' ' || raw[i-1] == '\t') {
			raw = raw[:i]
			break
		}
	}
	return strings.Trim(raw, " \t"), nil
}

// parseDouble parses a double-quoted value; s starts after the opening ".
func parseDouble(s string) (string, *Error) {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"':
			return b.String(), afterQuote(s[i+1:])
		case c == '\\' && i+1 < len(s):
			i++
			switch s[i] {
			case 'n':
				b.WriteByte('\n')
			case 't':
				b.WriteByte('\t')
			case '"', '\\':
				b.WriteByte(s[i])
			default:
				b.WriteByte('\\')
				b.WriteByte(s[i])
			}
		default:
			b.WriteByte(c)
		}
	}
	return "", &Error{Msg: "double quote not closed", Fix: `close the quote on the same line (values cannot span lines; write \n for a newline, \" for a quote)`}
}

// afterQuote checks what follows a closing quote: blanks, then optionally
// a comment.
func afterQuote(rest string) *Error {
	t := strings.TrimLeft(rest, " \t")
	if t == "" || t[0] == '#' && len(t) < len(rest) {
		return nil
	}
	return &Error{Msg: "text after the closing quote", Fix: "put the whole value inside the quotes, or separate a comment with a space: KEY=\"value\" # comment"}
}
