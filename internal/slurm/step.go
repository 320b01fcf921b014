package slurm

// step answers a shim in a job's sandbox, on a compute node (step mode):
// srun starts a step of this job, and nothing else is answered. The job
// already holds its allocation; what srun could add is another one, a
// step of another job (--jobid), or a step whose command runs outside the
// sandbox. So the step's flags are checked against stepFlags, the job is
// the chaperon's own (Config.Step, from slurmd, never from the sandbox),
// and the step's command runs under `stockade run` with the job's policy,
// as a job's command does.
func (c *Chaperon) step(req Request) (Reply, error) {
	if req.Command != "srun" {
		return Reply{}, refuse("inside a Slurm job only srun, for a step of this job (%s), is answered; submit, query and cancel from the session", c.cfg.Step)
	}
	if err := c.inProject(req.Cwd); err != nil {
		return Reply{}, err
	}
	p, err := parse(stepFlags(), req.Args)
	if err != nil {
		return Reply{}, refuse("%v", err)
	}
	if len(p.rest) == 0 {
		return Reply{Code: 1, Stderr: []byte("srun: fatal: No command given to execute.\n")}, nil
	}
	s, err := c.check(p.opts, req.Cwd)
	if err != nil {
		return Reply{}, err
	}
	jobDir, err := c.jobDir()
	if err != nil {
		return Reply{}, err
	}
	wrapper, err := c.writeWrapper(jobDir, s)
	if err != nil {
		return Reply{}, err
	}
	args := append([]string{"--jobid=" + c.cfg.Step}, s.pass...)
	args = append(args, "--chdir="+jobDir, wrapper)
	args = append(args, p.rest...)
	rep := c.realWait("srun", args...)
	c.event(EventSubmit, map[string]any{"command": "srun", "step_of": c.cfg.Step, "args": req.Args, "dir": s.dir, "code": rep.Code})
	return rep, nil
}
