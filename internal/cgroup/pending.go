package cgroup

import (
	"sync"
	"time"
)

// Pending is a group being made beside other work: on cgroup v1 making
// one (a directory per hierarchy, a write per limit) takes a good part of
// a millisecond, which a start can spend planning the filesystem instead.
type Pending struct {
	name   string
	limits Limits
	once   sync.Once
	g      *Group
	report Report
	err    error
}

// Begin starts New(name, l) in the background; then, when it is not nil,
// runs after it in the same goroutine: work of the background that must
// not keep the group from the second CPU (a group that is not made by the
// time the start needs it is made on the start's own path).
func Begin(name string, l Limits, then func()) *Pending {
	p := &Pending{name: name, limits: l}
	go func() {
		p.make()
		if then != nil {
			then()
		}
	}()
	return p
}

// make is New, once: in the goroutine Begin starts, or in the first
// Wait, whichever comes first. A goroutine can take a few tenths of a
// millisecond to start (a second core woken from idle): a Wait then makes
// the group itself rather than wait for it to start.
func (p *Pending) make() {
	p.once.Do(func() { p.g, p.report, p.err = New(p.name, p.limits) })
}

// Wait returns what New returned.
func (p *Pending) Wait() (*Group, Report, error) {
	p.make()
	return p.g, p.report, p.err
}

// TaskFiles waits for the group, then is Group.TaskFiles.
func (p *Pending) TaskFiles() []int {
	g, _, _ := p.Wait()
	return g.TaskFiles()
}

// InitPlaced is Group.InitPlaced.
func (p *Pending) InitPlaced(given bool) {
	g, _, _ := p.Wait()
	g.InitPlaced(given)
}

// Add waits for the group, then is Group.Add.
func (p *Pending) Add(pid int) error {
	g, _, _ := p.Wait()
	return g.Add(pid)
}

// Sweep waits for the group, then is Group.Sweep.
func (p *Pending) Sweep(prefix string, stale func(name string, made time.Time) bool) []string {
	g, _, _ := p.Wait()
	return g.Sweep(prefix, stale)
}

// Close waits for the group, then is Group.Close.
func (p *Pending) Close() error {
	g, _, _ := p.Wait()
	return g.Close()
}
