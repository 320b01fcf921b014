package cgroup

// Pending is a group being made beside other work: on cgroup v1 making
// one (a directory per hierarchy, a write per limit) takes a good part of
// a millisecond, which a start can spend planning the filesystem instead.
type Pending struct {
	done   chan struct{}
	g      *Group
	report Report
	err    error
}

// Begin starts New(name, l) in the background.
func Begin(name string, l Limits) *Pending {
	p := &Pending{done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.g, p.report, p.err = New(name, l)
	}()
	return p
}

// Wait returns what New returned.
func (p *Pending) Wait() (*Group, Report, error) {
	<-p.done
	return p.g, p.report, p.err
}

// ThreadFiles waits for the group, then is Group.ThreadFiles.
func (p *Pending) ThreadFiles() (into, back []int) {
	g, _, _ := p.Wait()
	return g.ThreadFiles()
}

// ThreadPlaced is Group.ThreadPlaced.
func (p *Pending) ThreadPlaced(moved bool) {
	g, _, _ := p.Wait()
	g.ThreadPlaced(moved)
}

// Add waits for the group, then is Group.Add.
func (p *Pending) Add(pid int) error {
	g, _, _ := p.Wait()
	return g.Add(pid)
}

// Close waits for the group, then is Group.Close.
func (p *Pending) Close() error {
	g, _, _ := p.Wait()
	return g.Close()
}
