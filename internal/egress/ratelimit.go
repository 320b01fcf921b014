package egress

import (
	"sync"
	"time"
)

// limiter is a token bucket: rate tokens a second, at most burst saved.
type limiter struct {
	mu     sync.Mutex
	rate   float64
	burst  float64
	tokens float64
	last   time.Time
	now    func() time.Time // time.Now; a fixed clock in tests
}

func newLimiter(rate, burst float64) *limiter {
	return &limiter{rate: rate, burst: burst, tokens: burst, now: time.Now}
}

// allow takes a token if there is one.
func (l *limiter) allow() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	if !l.last.IsZero() {
		l.tokens = min(l.burst, l.tokens+now.Sub(l.last).Seconds()*l.rate)
	}
	l.last = now
	if l.tokens < 1 {
		return false
	}
	l.tokens--
	return true
}

// everySecond lets an event through at most once a second and counts what it
// held back, so that a flood produces one audit line a second, not one per
// packet.
type everySecond struct {
	mu     sync.Mutex
	last   time.Time
	held   int
	now    func() time.Time
	period time.Duration
}

// tick reports whether the event may be recorded now and how many were held
// back since the last one.
func (e *everySecond) tick() (bool, int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	now := e.now()
	if !e.last.IsZero() && now.Sub(e.last) < e.period {
		e.held++
		return false, 0
	}
	held := e.held
	e.last, e.held = now, 0
	return true, held
}
