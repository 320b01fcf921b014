package cli

import (
	"errors"
	"strings"
	"testing"
)

// TestSlurmStepCheck: --slurm-step (a job's wrapper, on the compute node)
// needs --slurm and the job id slurmd set; anything else is a usage error
// before anything is set up.
func TestSlurmStepCheck(t *testing.T) {
	cases := []struct {
		f     slurmFlags
		jobID string
		want  string // "" no error
	}{
		{slurmFlags{Slurm: true, SlurmStep: true}, "42", ""},
		{slurmFlags{SlurmStep: true}, "42", "--slurm-step needs --slurm"},
		{slurmFlags{Slurm: true, SlurmStep: true}, "", "is not a job id"},
		{slurmFlags{Slurm: true, SlurmStep: true}, "42 43", "is not a job id"},
		{slurmFlags{Slurm: true, SlurmStep: true}, "-1", "is not a job id"},
		{slurmFlags{Slurm: true}, "", ""},
	}
	for _, c := range cases {
		t.Setenv("SLURM_JOB_ID", c.jobID)
		err := c.f.check("proxy")
		switch {
		case c.want == "" && err != nil:
			t.Errorf("%+v SLURM_JOB_ID=%q: %v", c.f, c.jobID, err)
		case c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want) || !errors.As(err, new(usageError))):
			t.Errorf("%+v SLURM_JOB_ID=%q: %v, want a usage error naming %q", c.f, c.jobID, err, c.want)
		}
	}
}
