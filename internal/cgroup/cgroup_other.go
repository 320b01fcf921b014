//go:build !linux

package cgroup

import "time"

import "errors"

const (
	notLinux    = "cgroups are Linux-only"
	notLinuxFix = "run stockade on Linux to enforce resource limits"
)

// Probe reports every requested limit as not enforced: cgroups are Linux-only.
func Probe(l Limits) Report { return notEnforced(l, notLinux, notLinuxFix) }

// Group is an empty group: nothing can be enforced on this OS.
type Group struct{}

// New returns an empty group and reports every requested limit as not enforced.
func New(name string, l Limits) (*Group, Report, error) {
	return &Group{}, notEnforced(l, notLinux, notLinuxFix), nil
}

// Paths returns nothing: the group has no directories.
func (g *Group) Paths() []string { return nil }

// Add does nothing: there is no group to move pid into.
func (g *Group) Add(pid int) error { return nil }

// Close does nothing.
func (g *Group) Close() error { return nil }

// Sweep does nothing: there are no groups.
func (g *Group) Sweep(string, func(string, time.Time) bool) []string { return nil }

// TaskFiles does nothing here.
func (g *Group) TaskFiles() []int { return nil }

// InitPlaced does nothing here.
func (g *Group) InitPlaced(bool) {}

// CPUThreads reports false: there is no cpu group to join.
func (g *Group) CPUThreads() bool { return false }

// JoinCPU fails: cgroups are Linux-only.
func (g *Group) JoinCPU() (leave func() error, err error) {
	return nil, errors.New(notLinux)
}
