//go:build !linux

package mount

import (
	"io/fs"
	"os"
)

func readDir(dir string) ([]fs.DirEntry, error) { return os.ReadDir(dir) }
