package mount

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/stockade-dev/stockade/internal/proc"
)

// A record lists the placeholders of one running sandbox with the process
// that will remove them. If that process is killed before it can, the next
// stockade to start finds the record and removes them instead.
type record struct {
	PID          int           `json:"pid"`
	Start        string        `json:"start"` // /proc/PID/stat start time: a reused PID is not the same process
	Placeholders []Placeholder `json:"placeholders"`
}

// SaveRecord writes the record of ps for the calling process into dir and
// returns a function that deletes it again.
func SaveRecord(dir, id string, ps []Placeholder) (func(), error) {
	if len(ps) == 0 {
		return func() {}, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	b, err := json.Marshal(record{PID: os.Getpid(), Start: proc.StartTime(os.Getpid()), Placeholders: ps})
	if err != nil {
		return nil, err
	}
	p := filepath.Join(dir, id+".json")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		return nil, fmt.Errorf("recording placeholders: %w", err)
	}
	return func() { os.Remove(p) }, nil
}

// Sweep removes the placeholders of every record in dir whose process is
// gone, and the record with them.
func Sweep(dir string) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range ents {
		p := filepath.Join(dir, e.Name())
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		var r record
		if json.Unmarshal(b, &r) != nil {
			os.Remove(p)
			continue
		}
		if proc.Alive(r.PID, r.Start) {
			continue // still running
		}
		if err := RemovePlaceholders(r.Placeholders); err != nil {
			errs = append(errs, err)
		}
		os.Remove(p)
	}
	return errors.Join(errs...)
}
