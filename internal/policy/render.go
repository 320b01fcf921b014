package policy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"text/tabwriter"
)

// showKeys is the order `policy show` prints keys in.
var showKeys = []string{
	"workdir", "network", "agent_policy", "resolver", "terminal", "log_level", "allow_hooks", "shared_home", "gitconfig", "memory", "cpus", "pids",
	"agent_allow", "agent_block", "upstream",
	"ro", "rw", "protect", "mask", "unmask", "env",
}

// JSON is the stable machine form of `policy show --json`:
// {"policy": {...}, "sources": {...}, "list_sources": {...}}, indented, with
// map keys sorted. It unmarshals back into an equal Resolved.
func (r Resolved) JSON() ([]byte, error) {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding policy: %w", err)
	}
	return append(b, '\n'), nil
}

// Text is the human form of `policy show`: one line per scalar and per list
// entry, each with its source in parentheses. Env values are not shown,
// only names, because they may be secrets.
func (r Resolved) Text() string {
	var buf bytes.Buffer
	w := tabwriter.NewWriter(&buf, 0, 0, 2, ' ', 0)
	for _, key := range showKeys {
		entries, isList := r.ListSources[key]
		if !isList {
			fmt.Fprintf(w, "%s\t%s\t(%s)\n", key, r.scalarText(key), r.Sources[key])
			continue
		}
		if len(entries) == 0 {
			fmt.Fprintf(w, "%s\t(none)\t\n", key)
		}
		label := key
		for _, e := range entries {
			v := e.Value
			if key == "env" {
				v = redactEnv(v)
			}
			fmt.Fprintf(w, "%s\t%s\t(%s)\n", label, v, e.Source)
			label = ""
		}
	}
	w.Flush()
	// tabwriter pads the empty source cell of "(none)" lines.
	lines := strings.Split(buf.String(), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return strings.Join(lines, "\n")
}

func (r Resolved) scalarText(key string) string {
	p := r.Policy
	switch key {
	case "workdir":
		return p.Workdir
	case "network":
		return p.Network
	case "agent_policy":
		return p.AgentPolicy
	case "resolver":
		if p.Resolver == "" {
			return "the host's"
		}
		return p.Resolver
	case "log_level":
		return p.LogLevel
	case "terminal":
		return p.Terminal
	case "allow_hooks":
		return strconv.FormatBool(p.AllowHooks)
	case "shared_home":
		return strconv.FormatBool(p.SharedHome)
	case "gitconfig":
		return strconv.FormatBool(p.GitConfig)
	case "memory":
		if p.Memory == 0 {
			return "no limit"
		}
		return FormatSize(p.Memory)
	case "cpus":
		if p.CPUs == 0 {
			return "no limit"
		}
		return strconv.FormatFloat(p.CPUs, 'f', -1, 64)
	case "pids":
		if p.Pids == 0 {
			return "no limit"
		}
		return strconv.FormatInt(p.Pids, 10)
	}
	return "?"
}

// redactEnv turns NAME=VALUE into NAME=… so `policy show` can be pasted
// into a bug report.
func redactEnv(entry string) string {
	if name, _, ok := strings.Cut(entry, "="); ok {
		return name + "=…"
	}
	return entry
}
