package policy

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// The parsers below return an error that completes a sentence starting with
// the offending value (`"lots" is not a size; …`); ref.errorf adds the source.

var errNotSize = errors.New(`is not a size; write a number with k, m, g or t (e.g. "2g")`)

// sizeUnits are binary multipliers: "2g" is 2 GiB, as for docker and systemd.
var sizeUnits = []struct {
	suffix string
	shift  uint
}{{"k", 10}, {"m", 20}, {"g", 30}, {"t", 40}}

// ParseSize parses a memory size: a number with a binary suffix k, m, g or
// t, optionally followed by "b" or "ib", in any case ("512m", "1.5G",
// "2GiB"). A bare number other than 0 is refused: `"memory": 4` meant 4 GiB
// far more often than the 4 bytes it would be.
func ParseSize(s string) (int64, error) {
	num := strings.ToLower(strings.TrimSpace(s))
	num = strings.TrimSuffix(strings.TrimSuffix(num, "ib"), "b")
	var shift uint
	for _, u := range sizeUnits {
		if strings.HasSuffix(num, u.suffix) {
			num, shift = strings.TrimSuffix(num, u.suffix), u.shift
			break
		}
	}
	if !isDecimal(num) {
		return 0, errNotSize
	}
	if shift == 0 {
		if strings.Trim(num, "0.") == "" {
			return 0, nil
		}
		return 0, fmt.Errorf(`is a size without a unit; write it with k, m, g or t (e.g. "%sg")`, num)
	}
	f, err := strconv.ParseFloat(num, 64)
	f *= float64(uint64(1) << shift)
	if err != nil || f >= math.MaxInt64 {
		return 0, errNotSize
	}
	return int64(f), nil
}

// isDecimal accepts digits with at most one '.', so "NaN", "Inf", "-1",
// "0x10" and "1e9" never reach strconv.
func isDecimal(s string) bool {
	digits, dots := 0, 0
	for _, c := range s {
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c == '.':
			dots++
		default:
			return false
		}
	}
	return digits > 0 && dots <= 1
}

// FormatSize renders a byte count for humans: "512 B", "1.5 MiB", "2.0 GiB".
func FormatSize(n int64) string {
	if n < 1024 {
		return fmt.Sprintf("%d B", n)
	}
	units := []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"}
	f := float64(n) / 1024
	i := 0
	for f >= 1024 && i < len(units)-1 {
		f /= 1024
		i++
	}
	return fmt.Sprintf("%.1f %s", f, units[i])
}

func parseCPUs(s string) (float64, error) {
	s = strings.TrimSpace(s)
	f, err := strconv.ParseFloat(s, 64)
	if !isDecimal(strings.TrimPrefix(s, "-")) || err != nil {
		return 0, errors.New(`is not a number of CPUs; write a number such as 2 or "1.5"`)
	}
	if f < 0 {
		return 0, errors.New("must be greater than 0")
	}
	return f, nil
}

func parsePids(s string) (int64, error) {
	s = strings.TrimSpace(s)
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, errors.New("is not a whole number of processes; write an integer such as 4096")
	}
	if n < 0 {
		return 0, errors.New("must be greater than 0")
	}
	return n, nil
}

func parseBool(s string) (bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "1", "true":
		return true, nil
	case "0", "false":
		return false, nil
	}
	return false, errors.New("is not a boolean; write true, false, 1 or 0")
}

func parseChoice(s string, choices []string, what string) (string, error) {
	if slices.Contains(choices, s) {
		return s, nil
	}
	return "", fmt.Errorf("is not a %s; use one of: %s", what, strings.Join(choices, ", "))
}

// hostPath makes an ro/rw/workdir value absolute against base and cleans it.
func hostPath(p, base string) (string, error) {
	if p == "" {
		return "", errors.New("is empty; write a path")
	}
	if !filepath.IsAbs(p) {
		if base == "" {
			return "", errors.New("is relative; write an absolute path")
		}
		p = filepath.Join(base, p)
	}
	return filepath.Clean(p), nil
}

// existing checks that host path p exists.
func existing(p string, stat func(string) (fs.FileInfo, error)) error {
	_, err := stat(p)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("(%s) does not exist; create it or remove the entry", p)
	default:
		return fmt.Errorf("(%s) cannot be checked: %v", p, err)
	}
}

// Pattern normalizes a protect/mask/unmask entry: absolute entries are
// cleaned; relative ones are relative to the workdir and may not leave it.
// A trailing "/" (a directory) survives cleaning.
func Pattern(p string) (string, error) {
	if p == "" {
		return "", errors.New("is empty; write a path relative to the workdir")
	}
	if strings.ContainsRune(p, 0) {
		return "", errors.New("contains a NUL byte")
	}
	c := path.Clean(p)
	switch {
	case c == "/":
		return "", errors.New("is the root directory; name a path inside it")
	case !path.IsAbs(c) && (c == "." || c == ".." || strings.HasPrefix(c, "../")):
		return "", errors.New("is not inside the workdir; write a path relative to the workdir, or an absolute path")
	}
	for _, elem := range strings.Split(c, "/") {
		if _, err := path.Match(elem, ""); err != nil {
			return "", errors.New("is not a valid glob")
		}
	}
	if strings.HasSuffix(p, "/") {
		c += "/"
	}
	return c, nil
}

// omitHint says how to express "no limit" in the source that was used.
func (r ref) omitHint() string {
	switch r.kind {
	case KindEnv:
		return "unset " + envName(r.key)
	case KindFlag:
		return "drop " + flagName(r.key)
	}
	return "leave the key out"
}

// positive rejects an explicit 0: a zero limit never means "less restricted".
func positive(r ref, isZero bool) error {
	if isZero {
		return fmt.Errorf("must be greater than 0; %s for no limit", r.omitHint())
	}
	return nil
}

func validLimits(p Policy) error {
	if p.Memory < 0 || p.Pids < 0 || p.CPUs < 0 || math.IsNaN(p.CPUs) || math.IsInf(p.CPUs, 0) {
		return fmt.Errorf("memory %d, cpus %v, pids %d: limits must be positive, or 0 for none", p.Memory, p.CPUs, p.Pids)
	}
	return nil
}

// osStat is the stat used when loading layers; Validate takes its own.
var osStat = os.Stat

// parseResolver checks an ADDR[:PORT] of a DNS server: an IP literal, so
// that resolving the resolver needs no resolver.
func parseResolver(s string) (string, error) {
	host, port := s, ""
	if h, p, err := net.SplitHostPort(s); err == nil {
		host, port = h, p
	}
	if _, err := netip.ParseAddr(host); err != nil {
		return "", fmt.Errorf("is not a resolver address; write an IP with an optional port (e.g. \"192.0.2.53:53\")")
	}
	if port != "" {
		if n, err := strconv.Atoi(port); err != nil || n < 1 || n > 65535 {
			return "", fmt.Errorf("has a bad port; write a port from 1 to 65535")
		}
	}
	return s, nil
}

// parseUpstreamSyntax checks a ROUTE=URL entry: a route name and an http or
// https URL; the auth proxy checks the route against its table at start.
func parseUpstreamSyntax(s string) (string, error) {
	route, raw, ok := strings.Cut(s, "=")
	u, err := url.Parse(raw)
	if !ok || route == "" || err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return "", fmt.Errorf("is not ROUTE=URL; write e.g. \"anthropic=https://gateway.example.com\"")
	}
	return s, nil
}
