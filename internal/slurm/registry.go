package slurm

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// record is one job submitted through a chaperon, a line of the registry
// (State/jobs.jsonl), which every session of the user appends to and
// reads under flock.
type record struct {
	Job     string    `json:"job"`
	Session string    `json:"session"`
	Project string    `json:"project"`
	At      time.Time `json:"at"`
}

func bytesReader(b []byte) io.Reader { return bytes.NewReader(b) }

func (c *Chaperon) registry() string { return filepath.Join(c.cfg.State, "jobs.jsonl") }

// register appends a submitted job to the registry.
func (c *Chaperon) register(job string) error {
	f, err := os.OpenFile(c.registry(), os.O_WRONLY|os.O_APPEND|os.O_CREATE|unix.O_NOFOLLOW, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		return err
	}
	line, _ := json.Marshal(record{Job: job, Session: c.cfg.Session, Project: c.cfg.Workdir, At: time.Now().UTC()})
	_, err = f.Write(append(line, '\n'))
	return err
}

// scoped returns the ids of the jobs in the session's scope, oldest first.
func (c *Chaperon) scoped() []string {
	f, err := os.OpenFile(c.registry(), os.O_RDONLY|unix.O_NOFOLLOW, 0)
	if err != nil {
		return nil
	}
	defer f.Close()
	unix.Flock(int(f.Fd()), unix.LOCK_SH)
	var ids []string
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var r record
		if json.Unmarshal(sc.Bytes(), &r) != nil || r.Job == "" || seen[r.Job] {
			continue
		}
		switch c.cfg.Scope {
		case ScopeUser:
		case ScopeProject:
			if r.Project != c.cfg.Workdir {
				continue
			}
		default:
			if r.Session != c.cfg.Session {
				continue
			}
		}
		seen[r.Job] = true
		ids = append(ids, r.Job)
	}
	return ids
}

// inScope reports whether a job id (12, 12_3, 12+0, 12_[1-3]) names a
// job in scope.
func (c *Chaperon) inScope(id string, scoped []string) bool {
	// Only a job id of Slurm's own forms: the real commands split a job
	// list at spaces too, so "42+0 43" would have passed as job 42 and
	// reached 43 as well.
	m := jobIDForm().FindStringSubmatch(id)
	if m == nil {
		return false
	}
	base := m[1]
	for _, s := range scoped {
		if s == base {
			return true
		}
	}
	return false
}

// jobIDForm is a job id as Slurm writes one: the job, an array task or
// tasks, a heterogeneous component, a step; nothing else. (Compiled at
// first use, not at every start.)
var jobIDForm = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`^([0-9]+)(_([0-9]+|\*|\[[0-9,%-]+\]))?(\+[0-9]+)?(\.([0-9]+|batch|extern|interactive))?$`)
})
