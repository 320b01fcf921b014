package audit

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
)

// Render is the human form of an event, as `stockade logs` prints it:
//
//	stockade: 2026-11-22T10:00:00Z supervisor: session started: claude in /home/u/proj (loosened: allow_hooks)
//
// Known events get a sentence built from their fields; others are shown as
// `event key=value …`. Control characters, bidirectional controls and the
// characters a terminal shows as nothing (which the agent may have put in a
// path or host name) are shown escaped, so the output can neither drive the
// reader's terminal nor hide or reorder what it says.
func Render(e Event) string {
	msg := ""
	if k, ok := kinds[e.Event]; ok && k.message != nil {
		msg = k.message(e.Fields)
	} else {
		msg = generic(e.Event, e.Fields)
	}
	return fmt.Sprintf("stockade: %s %s: %s", e.Time.UTC().Format(time.RFC3339), sanitize(e.Source), sanitize(msg))
}

// fields are an event's fields as read back, with accessors that tolerate
// absent keys and unexpected types: the renderer must show whatever a line
// holds, including lines written by a later version.
type fields map[string]any

// str is the field's text, "" when absent; non-strings are shown as JSON.
func (f fields) str(key string) string {
	v, ok := f[key]
	if !ok || v == nil {
		return ""
	}
	if s, ok := v.(string); ok {
		return s
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// opt formats the field with format ("%s" gets its text) when it is present.
func (f fields) opt(format, key string) string {
	if s := f.str(key); s != "" {
		return fmt.Sprintf(format, s)
	}
	return ""
}

// list is a field holding an array, as text.
func (f fields) list(key string) []string {
	arr, _ := f[key].([]any)
	out := make([]string, 0, len(arr))
	for _, v := range arr {
		out = append(out, fields{"x": v}.str("x"))
	}
	return out
}

// details joins the non-empty parts as " (a, b)".
func details(parts ...string) string {
	parts = slices.DeleteFunc(parts, func(s string) bool { return s == "" })
	if len(parts) == 0 {
		return ""
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

func startMessage(f fields) string {
	what := strings.Join(f.list("command"), " ")
	if what == "" {
		what = f.str("agent")
	}
	msg := "session started"
	if what != "" {
		msg += ": " + what
	}
	msg += f.opt(" in %s", "workdir")
	if l := f.list("loosened"); len(l) > 0 {
		msg += " (loosened: " + strings.Join(l, ", ") + ")"
	}
	return msg
}

func stopMessage(f fields) string {
	return "session stopped" + f.opt(": %s", "reason") + details(f.opt("exit status %s", "status"), f.opt("state %s", "state"))
}

func restartMessage(f fields) string {
	return "command restarted" + f.opt(" after exit status %s", "status") +
		details(f.opt("attempt %s", "attempt"), f.opt("backoff %sms", "backoff_ms"))
}

func clientMessage(what string) func(fields) string {
	return func(f fields) string {
		return what + details(f.opt("pid %s", "pid"), f.opt("%s attached now", "clients"))
	}
}

func signalMessage(f fields) string {
	return "signal " + f.str("signal") + f.opt(" to %s", "target") + f.opt(" by %s", "by")
}

func initFailureMessage(f fields) string {
	return "sandbox setup failed" + f.opt(" at step %s", "step") + f.opt(": %s", "error") + details(f.opt("exit status %s", "status"))
}

func warningMessage(f fields) string { return "warning: " + f.str("message") }

func tamperMessage(f fields) string {
	return "protected path changed: " + f.str("path") + f.opt(" (%s)", "op") + f.opt("; %s", "action")
}

func findingMessage(f fields) string {
	return f.str("kind") + ": " + f.str("path") + f.opt(" (%s)", "rule") + f.opt(": %s", "detail")
}

func hostPort(f fields) string { return f.str("host") + f.opt(":%s", "port") }

func containerRefusedMessage(f fields) string {
	return "container refused (check " + f.str("check") + "): " + f.str("field") + f.opt(": %s", "reason") +
		details(f.opt("container %s", "container"), f.opt("image %s", "image"))
}

func networkDeniedMessage(f fields) string {
	return "network denied: " + hostPort(f) + f.opt(" (%s)", "reason")
}

func connectionMessage(f fields) string {
	return "connection: " + hostPort(f) + details(f.opt("%s bytes in", "bytes_in"), f.opt("%s bytes out", "bytes_out"), f.opt("%sms", "duration_ms"))
}

func authRequestMessage(f fields) string {
	return "auth proxy" + f.opt(" %s", "provider") + ": " + f.str("method") + " " + f.str("path") +
		f.opt(" -> %s", "status") + f.opt(" (%s)", "model") +
		details(f.opt("%s bytes out", "request_bytes"), f.opt("%s bytes in", "response_bytes"), f.opt("%sms", "duration_ms"), f.opt("error: %s", "error"))
}

func authDeniedMessage(f fields) string {
	return "auth proxy refused" + f.opt(" %s", "provider") + ": " + f.str("method") + " " + f.str("path") + f.opt(": %s", "reason")
}

func sshSignMessage(f fields) string {
	m := "ssh agent signed with " + f.str("fingerprint") + f.opt(" (%s)", "key_type") + f.opt(": %s", "kind") +
		f.opt(" user %s", "user") + f.opt(" service %s", "service") + f.opt(" namespace %s", "namespace") + f.opt(" host key %s", "host_key")
	return m + f.opt(": FAILED: %s", "error")
}

func sshDeniedMessage(f fields) string {
	return "ssh agent refused " + f.str("request") + f.opt(" %s", "fingerprint") + f.opt(": %s", "reason")
}

// generic renders an event nobody taught the renderer: its name, then
// key=value in key order, values quoted when they are not a plain word.
func generic(event string, f fields) string {
	var b strings.Builder
	b.WriteString(event)
	keys := make([]string, 0, len(f))
	for k := range f {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		v := f.str(k)
		if _, isString := f[k].(string); isString && !plainWord(v) {
			v = strconv.Quote(v)
		}
		fmt.Fprintf(&b, " %s=%s", k, v)
	}
	return b.String()
}

func plainWord(s string) bool {
	return s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("._/:@+-,", r))
	})
}

// Sanitize escapes what a terminal would act on, and what it would not
// show, as Render does: for text from an event that is printed elsewhere
// (stockade why, the sandbox's denials file).
func Sanitize(s string) string { return sanitize(s) }

// sanitize escapes what a terminal would act on, and what it would not
// show: the names come from the sandboxed command, which can make a name
// look like another, or reorder what follows it on the line.
func sanitize(s string) string {
	if !strings.ContainsFunc(s, hiddenRune) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case !hiddenRune(r):
			b.WriteRune(r)
		case r < 0x80:
			fmt.Fprintf(&b, `\x%02x`, r)
		case r > 0xffff:
			fmt.Fprintf(&b, `\U%08x`, r)
		default:
			fmt.Fprintf(&b, `\u%04x`, r)
		}
	}
	return b.String()
}

// hidden are the classes of characters a terminal acts on or shows as
// nothing: format characters (Cf: the bidi marks U+200E/F and U+061C, the
// zero-width characters, U+FEFF, soft hyphen, tags), the line and paragraph
// separators U+2028/9 (Zl, Zp), every bidi control, and the other default
// ignorable code points and variation selectors (Hangul fillers, U+180B…).
var hidden = []*unicode.RangeTable{unicode.Cc, unicode.Cf, unicode.Zl, unicode.Zp,
	unicode.Bidi_Control, unicode.Other_Default_Ignorable_Code_Point, unicode.Variation_Selector}

// hiddenRune reports whether r is shown escaped.
func hiddenRune(r rune) bool {
	return unsafeRune(r) || r >= 0x80 && unicode.In(r, hidden...)
}

func networkRuleMessage(f fields) string {
	return "network rule " + f.str("action") + " " + f.str("rule") + f.opt(" (of the %s rules)", "scope")
}

func dnsDeniedMessage(f fields) string {
	return "DNS query refused" + f.opt(": %s", "name") + f.opt(" (%s)", "qtype") + f.opt(": %s", "reason") +
		details(f.opt("%s queries", "dropped"))
}

// slurmMessage renders the Slurm chaperon's events: what was asked (the
// command line, each word quoted when it is not plain), the job, and why a
// request was refused.
func slurmMessage(what string) func(f fields) string {
	return func(f fields) string {
		line := []string{f.str("command")}
		for _, a := range f.list("args") {
			if a == "" || strings.ContainsFunc(a, func(r rune) bool { return !plainRune(r) }) {
				a = strconv.Quote(a)
			}
			line = append(line, a)
		}
		jobs := strings.Join(f.list("jobs"), ",")
		return what + f.opt(" job %s", "job") + f.opt(" a step of job %s", "step_of") + details(jobs) + ": " + strings.Join(line, " ") + f.opt(": %s", "reason")
	}
}

// plainRune is a rune a command-line word may hold unquoted.
func plainRune(r rune) bool {
	return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_=.,:/@%+", r)
}
