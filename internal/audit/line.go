package audit

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"
)

// MaxLineSize bounds one line, newline excluded. Log refuses a larger event;
// readers report a larger line instead of buffering it.
const MaxLineSize = 1 << 20

// zeroHash is the prev of the first line.
var zeroHash = string(bytes.Repeat([]byte("0"), sha256.Size*2))

// Event is one line of the log.
type Event struct {
	V       int
	Seq     uint64
	Time    time.Time
	Session string
	Source  string
	Event   string
	// Fields holds the other keys. Numbers are json.Number, objects
	// map[string]any, arrays []any.
	Fields map[string]any
	Prev   string
	Hash   string
	// Raw is the line as written, without its newline: what `logs --json`
	// prints.
	Raw []byte
}

// encodeValue encodes one field value. Besides what encoding/json escapes,
// it escapes DEL, the C1 controls and the bidirectional overrides, which
// some terminals act on, so that `cat` of a log cannot be turned against the
// reader by a host name or path chosen by the agent.
func encodeValue(v any) ([]byte, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	if !slices.ContainsFunc(b, func(c byte) bool { return c == 0x7f || c >= 0x80 }) {
		return b, nil
	}
	out := make([]byte, 0, len(b)+16)
	for i := 0; i < len(b); {
		r, n := utf8.DecodeRune(b[i:])
		if unsafeRune(r) {
			// Outside strings JSON is ASCII, so r is inside a string.
			out = fmt.Appendf(out, `\u%04x`, r)
		} else {
			out = append(out, b[i:i+n]...)
		}
		i += n
	}
	return out, nil
}

// unsafeRune reports whether a terminal may act on r: DEL, C1 controls,
// bidirectional embeddings, overrides and isolates. C0 controls are escaped
// by encoding/json already.
func unsafeRune(r rune) bool {
	return r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f ||
		r >= 0x202a && r <= 0x202e || r >= 0x2066 && r <= 0x2069
}

// encodeLine builds a complete line, newline included, from the event's
// reserved values and the already encoded fields (sorted by key), and its
// hash.
func encodeLine(seq uint64, t time.Time, session, source, event string, keys []string, vals [][]byte, prev string) ([]byte, string) {
	b := make([]byte, 0, 256)
	b = append(b, `{"v":`...)
	b = strconv.AppendInt(b, Version, 10)
	b = append(b, `,"seq":`...)
	b = strconv.AppendUint(b, seq, 10)
	b = append(b, `,"time":`...)
	b = strconv.AppendQuote(b, t.UTC().Format(time.RFC3339Nano))
	for _, kv := range [][2]string{{"session", session}, {"source", source}, {"event", event}} {
		b = append(b, `,"`+kv[0]+`":`...)
		b = strconv.AppendQuote(b, kv[1]) // names are checked to be plain ASCII
	}
	for i, k := range keys {
		b = append(b, `,"`+k+`":`...) // keys are checked by checkKey
		b = append(b, vals[i]...)
	}
	b = append(b, `,"prev":"`+prev+`"}`...)
	sum := sha256.Sum256(b)
	hash := hex.EncodeToString(sum[:])
	b = b[:len(b)-1]
	b = append(b, `,"hash":"`+hash+"\"}\n"...)
	return b, hash
}

// hashSuffixLen is len(`,"hash":"` + 64 hex digits + `"}`).
const hashSuffixLen = len(`,"hash":""}`) + sha256.Size*2

// lineHash returns the hash a line's content calls for: the SHA-256 of the
// line without its trailing `,"hash":"…"`. It fails when the line does not
// end in that form.
func lineHash(line []byte) (string, error) {
	if len(line) < hashSuffixLen+1 || !bytes.HasPrefix(line[len(line)-hashSuffixLen:], []byte(`,"hash":"`)) ||
		!bytes.HasSuffix(line, []byte(`"}`)) {
		return "", errors.New(`line does not end with ,"hash":"<64 hex digits>"}`)
	}
	h := sha256.New()
	h.Write(line[:len(line)-hashSuffixLen])
	h.Write([]byte("}"))
	return hex.EncodeToString(h.Sum(nil)), nil
}

// parseLine parses one line (without its newline) strictly: a JSON object
// whose keys are v, seq, time, session, source, event, the fields, prev and
// hash, in that order, each once. It does not check the hash.
func parseLine(line []byte) (Event, error) {
	ev := Event{Raw: line}
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return ev, errors.New("not a JSON object")
	}
	var keys []string
	raws := map[string]json.RawMessage{}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return ev, fmt.Errorf("reading key: %w", err)
		}
		key := t.(string) // inside an object, Token returns keys as strings
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return ev, fmt.Errorf("reading value of %q: %w", key, err)
		}
		if _, dup := raws[key]; dup {
			return ev, fmt.Errorf("key %q appears twice", key)
		}
		keys = append(keys, key)
		raws[key] = raw
	}
	if _, err := dec.Token(); err != nil {
		return ev, fmt.Errorf("reading end of object: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return ev, errors.New("data after the object")
	}
	if err := checkKeyOrder(keys); err != nil {
		return ev, err
	}
	if err := ev.decodeReserved(raws); err != nil {
		return ev, err
	}
	for _, k := range keys[6 : len(keys)-2] {
		if err := checkKey(k); err != nil {
			return ev, err
		}
		var v any
		d := json.NewDecoder(bytes.NewReader(raws[k]))
		d.UseNumber()
		if err := d.Decode(&v); err != nil {
			return ev, fmt.Errorf("reading field %q: %w", k, err)
		}
		if ev.Fields == nil {
			ev.Fields = map[string]any{}
		}
		ev.Fields[k] = v
	}
	return ev, nil
}

func checkKeyOrder(keys []string) error {
	if len(keys) < len(reserved) {
		return fmt.Errorf("has %d keys, want at least the %d reserved ones", len(keys), len(reserved))
	}
	got := append(slices.Clone(keys[:6]), keys[len(keys)-2:]...)
	if !slices.Equal(got, reserved) {
		return fmt.Errorf("keys %q are not in the order v, seq, time, session, source, event, …, prev, hash", keys)
	}
	return nil
}

func (ev *Event) decodeReserved(raws map[string]json.RawMessage) error {
	var v, seq json.Number
	var tm string
	for _, d := range []struct {
		key string
		dst any
	}{
		{"v", &v}, {"seq", &seq}, {"time", &tm}, {"session", &ev.Session},
		{"source", &ev.Source}, {"event", &ev.Event}, {"prev", &ev.Prev}, {"hash", &ev.Hash},
	} {
		dec := json.NewDecoder(bytes.NewReader(raws[d.key]))
		dec.UseNumber()
		if err := dec.Decode(d.dst); err != nil {
			return fmt.Errorf("reading %q: %w", d.key, err)
		}
	}
	if v != "1" {
		return fmt.Errorf("version %q is not supported (want %d)", v, Version)
	}
	ev.V = Version
	n, err := strconv.ParseUint(string(seq), 10, 64)
	if err != nil || n == 0 {
		return fmt.Errorf("seq %q is not a positive integer", seq)
	}
	ev.Seq = n
	if ev.Time, err = time.Parse(time.RFC3339Nano, tm); err != nil {
		return fmt.Errorf("reading time: %w", err)
	}
	if !isSessionID(ev.Session) || !isName(ev.Source) || !isName(ev.Event) {
		return fmt.Errorf("session %q, source %q or event %q is not a name", ev.Session, ev.Source, ev.Event)
	}
	if !isHex(ev.Prev) || !isHex(ev.Hash) {
		return errors.New("prev or hash is not 64 lower-case hex digits")
	}
	return nil
}

// isSessionID reports whether s is a non-empty [A-Za-z0-9_-]{1,64}.
func isSessionID(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

func isHex(s string) bool {
	if len(s) != sha256.Size*2 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !(s[i] >= '0' && s[i] <= '9' || s[i] >= 'a' && s[i] <= 'f') {
			return false
		}
	}
	return true
}

// Errors of lineReader.next that concern one line, not the reader.
var (
	errLineTooLong = fmt.Errorf("line is longer than %d bytes", MaxLineSize)
	errNoNewline   = errors.New("last line has no newline: the writer stopped mid-line or the file was cut")
)

// lineReader splits a log into lines without holding more than MaxLineSize.
type lineReader struct {
	br  *bufio.Reader
	buf []byte
}

func newLineReader(r io.Reader) *lineReader { return &lineReader{br: bufio.NewReaderSize(r, 64<<10)} }

// next returns the next line without its newline. A line that is too long,
// or a last line without a newline, comes back with errLineTooLong or
// errNoNewline; the end of input is io.EOF. The line is valid until the next
// call.
func (lr *lineReader) next() ([]byte, error) {
	lr.buf = lr.buf[:0]
	long := false
	for {
		chunk, err := lr.br.ReadSlice('\n')
		if !long && len(lr.buf)+len(chunk) > MaxLineSize+1 {
			long, lr.buf = true, lr.buf[:0]
		}
		if !long {
			lr.buf = append(lr.buf, chunk...)
		}
		switch {
		case err == nil && long:
			return nil, errLineTooLong
		case err == nil:
			return lr.buf[:len(lr.buf)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF) && long:
			return nil, errLineTooLong
		case errors.Is(err, io.EOF) && len(lr.buf) > 0:
			return lr.buf, errNoNewline
		default:
			return nil, err
		}
	}
}
