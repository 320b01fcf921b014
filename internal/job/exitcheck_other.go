//go:build !linux

package job

import "github.com/stockade-dev/stockade/internal/mount"

func quarantine(string, []mount.Found) []Finding { return nil }
