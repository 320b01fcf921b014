//go:build !linux

package cli

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
)

// newID makes a session ID.
func newID() (string, error) {
	b := make([]byte, 3)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("making a session id: %w", err)
	}
	return hex.EncodeToString(b), nil
}

// seccompAvailable fails: seccomp is Linux's.
func seccompAvailable() error { return errors.New("seccomp needs Linux") }

// mkdirBelow fails: stockade's directories are made through Linux's openat2.
func mkdirBelow(root, rel string) error { return errors.New("stockade needs Linux") }
