// Package denial keeps what the sandbox refused where the agent and the user
// can read it. A denial is read from the event the proxies log
// (network_denied, dns_denied: one row each of the kinds table, so another
// kind of denial is one more row), rendered as one line, and kept:
//
//   - in a File the supervisor writes and the sandbox sees read-only at
//     Path (a file that lives only in the sandbox: init makes it and hands
//     the supervisor a write-only descriptor; nothing of it is on the
//     host's disk): the newest denials of the run, bounded, so that an
//     agent whose connection failed without a readable answer (a CONNECT
//     refused with 403 that curl shows as "CONNECT tunnel failed", a DNS
//     NXDOMAIN) can learn which rule refused it and what a human would run
//     to allow it;
//   - in the audit log, as the event itself, where `stockade why` finds it
//     on the host (Read), for a session or a foreground run, running or
//     ended.
//
// Every field of a line comes from the sandboxed command in part (a host
// name, a SOCKS5 name with any bytes in it), so each is escaped (no control
// character, no column separator) and cut to a bounded length: the agent
// cannot forge a line, nor drive the terminal of the user reading why.
package denial

import (
	"encoding/json"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/stockade-dev/stockade/internal/audit"
)

// Path is where the sandbox sees the file of its run's denials.
const Path = "/run/stockade/denials"

// Denial is one thing the sandbox refused.
type Denial struct {
	Time time.Time `json:"time"`
	// Kind is what was refused: "network" (a connection or a DNS name).
	Kind string `json:"kind"`
	// Proto is how it was asked for: connect, http, socks5, capture, dns.
	Proto string `json:"proto"`
	Host  string `json:"host"`
	Port  int    `json:"port,omitempty"` // 0: none (a DNS question)
	// Rule is what decided, as the user writes it ("deny mode", "floor",
	// "*.example.com").
	Rule   string `json:"rule"`
	Reason string `json:"reason,omitempty"`
	// Fix is the command a human runs on the host to allow it; "" when
	// no command would (an invalid name).
	Fix string `json:"fix,omitempty"`
}

// kind reads one audit event as a denial.
type kind struct {
	event string
	read  func(f fields) (Denial, bool)
}

// kinds are the audit events that are denials. A new kind of denial
// (a file the sandbox could not open, a request the auth proxy refused)
// is a row here, and then both the file and why show it.
var kinds = []kind{
	{audit.EventNetworkDenied, func(f fields) (Denial, bool) {
		return Denial{Kind: "network", Proto: f.str("proto"), Host: f.str("host"), Port: f.num("port"),
			Rule: f.str("rule"), Reason: f.str("reason"), Fix: f.str("fix")}, f.str("host") != ""
	}},
	{audit.EventDNSDenied, func(f fields) (Denial, bool) {
		// The rate limit's event names no question: nothing to allow.
		return Denial{Kind: "network", Proto: "dns", Host: f.str("name"),
			Rule: f.str("rule"), Reason: f.str("reason"), Fix: f.str("fix")}, f.str("name") != ""
	}},
}

// FromEvent returns the denial an event records at t, if it is one.
func FromEvent(t time.Time, event string, f map[string]any) (Denial, bool) {
	for _, k := range kinds {
		if k.event == event {
			d, ok := k.read(fields(f))
			d.Time = t.UTC()
			return d, ok
		}
	}
	return Denial{}, false
}

// IsDenial reports whether event is a kind of denial.
func IsDenial(event string) bool {
	for _, k := range kinds {
		if k.event == event {
			return true
		}
	}
	return false
}

// Target is host:port, or the host alone when there is no port.
func (d Denial) Target() string {
	if d.Port == 0 {
		return d.Host
	}
	return net.JoinHostPort(d.Host, strconv.Itoa(d.Port))
}

// maxField bounds each field of a line: a host name is at most 253 bytes,
// and a reason names it once or twice.
const maxField = 512

// maxLine bounds a line: five fields, their labels and the time.
const maxLine = 6*(maxField+len("…")) + 64

// Line is the denial as one line, without its newline:
//
//	2026-11-25T01:02:03Z connect example.com:443 | rule: deny mode | not in the allowlist (deny mode) | allow: stockade network agent allow -s ID example.com
func (d Denial) Line() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s | rule: %s", d.Time.UTC().Format(time.RFC3339), field(d.Proto), field(d.Target()), field(d.Rule))
	if d.Reason != "" {
		fmt.Fprintf(&b, " | %s", field(d.Reason))
	}
	if d.Fix != "" {
		fmt.Fprintf(&b, " | allow: %s", field(d.Fix))
	}
	return b.String()
}

// field is s escaped (audit.Sanitize: no control or invisible
// character; and no column separator), then cut to maxField bytes: an
// escape makes a character up to ten bytes long, so the cut comes after.
func field(s string) string {
	s = strings.ReplaceAll(audit.Sanitize(s), "|", `\x7c`)
	if len(s) > maxField {
		cut := maxField
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// fields are an event's fields as the proxy hands them (Go values) or as
// read back from the log (JSON values).
type fields map[string]any

func (f fields) str(key string) string {
	switch v := f[key].(type) {
	case string:
		return v
	case nil:
		return ""
	default:
		return fmt.Sprint(v)
	}
}

func (f fields) num(key string) int {
	switch v := f[key].(type) {
	case int:
		return v
	case uint16:
		return int(v)
	case float64:
		return int(v)
	case json.Number:
		n, _ := v.Int64()
		return int(n)
	}
	return 0
}
