package audit

import (
	"cmp"
	"fmt"
	"slices"
	"time"
)

// Throttle of events the sandboxed command can cause at will (a denied
// connection costs it one connect): each throttled event name has a token
// bucket per log. Past the bucket, an event is counted, and every
// summaryEvery the count goes into one suppressed event, with a few of the
// destinations as samples. A denial flood thus costs a few lines a second,
// not one line (and an fsync) per attempt.
const (
	throttleBurst = 20              // events let through at once
	throttleRate  = 1.0             // events a second after the burst
	summaryEvery  = 5 * time.Second // at most one suppressed event per kind this often
	maxSamples    = 5               // distinct samples kept per summary
)

type bucket struct {
	tokens  float64
	last    time.Time // of the last refill
	held    int       // events counted since the last summary
	since   time.Time // first held event
	told    time.Time // last summary
	samples []string
	source  string // of the events held
}

type throttle struct{ buckets map[string]*bucket }

func newThrottle() throttle { return throttle{buckets: map[string]*bucket{}} }

// allow takes a token for event, or counts it (with its sample) and
// returns false.
func (t *throttle) allow(source, event, sample string, now time.Time) bool {
	b := t.buckets[event]
	if b == nil {
		b = &bucket{tokens: throttleBurst, last: now, told: now}
		t.buckets[event] = b
	}
	b.tokens = min(throttleBurst, b.tokens+now.Sub(b.last).Seconds()*throttleRate)
	b.last = now
	if b.tokens >= 1 {
		b.tokens--
		return true
	}
	if b.held == 0 {
		b.since = now
	}
	b.held++
	b.source = source
	if len(b.samples) < maxSamples && !slices.Contains(b.samples, sample) {
		b.samples = append(b.samples, sample)
	}
	return false
}

// summary is one suppressed event.
type summary struct {
	source  string
	event   string
	count   int
	seconds int64
	samples []string
}

func (s summary) fields() map[string]any {
	return map[string]any{"of": s.event, "count": s.count, "seconds": s.seconds, "samples": s.samples}
}

// due takes the summaries whose period is over (every one that holds
// anything, with force), in event order.
func (t *throttle) due(now time.Time, force bool) []summary {
	var out []summary
	for ev, b := range t.buckets {
		if b.held == 0 || !force && now.Sub(b.told) < summaryEvery {
			continue
		}
		secs := int64(now.Sub(b.since).Round(time.Second) / time.Second)
		out = append(out, summary{source: b.source, event: ev, count: b.held, seconds: max(secs, 1), samples: b.samples})
		b.held, b.samples, b.told = 0, nil, now
	}
	slices.SortFunc(out, func(a, b summary) int { return cmp.Compare(a.event, b.event) })
	return out
}

// Samples: what a throttled event's summary shows of it.

func hostPortSample(f map[string]any) (string, bool) {
	return fmt.Sprintf("%v:%v", f["host"], f["port"]), true
}

// checkSample counts refused containers by check and field.
func checkSample(f map[string]any) (string, bool) {
	return fmt.Sprintf("%v %v", f["check"], f["field"]), true
}

// failedConnectionSample throttles only connections that failed: one that
// carried traffic is recorded every time.
func failedConnectionSample(f map[string]any) (string, bool) {
	if _, failed := f["error"]; !failed {
		return "", false
	}
	return hostPortSample(f)
}

// slurmRefusedSample: the sandboxed command may ask the Slurm chaperon for
// refused things in a loop.
func slurmRefusedSample(f map[string]any) (string, bool) {
	return fmt.Sprintf("%v: %v", f["command"], f["reason"]), true
}

func authDeniedSample(f map[string]any) (string, bool) {
	return fmt.Sprintf("%v %v %v", f["provider"], f["method"], f["path"]), true
}

// failedSignSample throttles only signatures that failed (the user's agent
// does not hold the key, or refused): the sandbox can ask for those in a
// loop at no cost. A signature made is recorded every time.
func failedSignSample(f map[string]any) (string, bool) {
	if _, failed := f["error"]; !failed {
		return "", false
	}
	return fmt.Sprintf("%v %v", f["fingerprint"], f["error"]), true
}

func sshDeniedSample(f map[string]any) (string, bool) {
	return fmt.Sprintf("%v %v", f["request"], f["reason"]), true
}
