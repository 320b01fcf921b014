//go:build !linux

package audit

// watch returns no channel: without inotify Follow polls.
func watch(string) (<-chan struct{}, func()) { return nil, func() {} }
