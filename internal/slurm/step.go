package slurm

// step answers a shim in a job's sandbox, on a compute node (step mode):
// srun starts a step of this job, and nothing else is answered. The job
// already holds its allocation; what srun could add is another one, a
// step of another job (--jobid), or a step whose command runs outside the
// sandbox. So the step's flags are checked against stepFlags, the job is
// the chaperon's own (Config.Step, from slurmd, never from the sandbox),
// and the step's command runs under `stockade run` with the job's policy,
// as a job's command does.
func (c *Chaperon) step(req Request, sh *shim) (Reply, error) {
	if req.Command != "srun" {
		return Reply{}, refuse("inside a Slurm job only srun, for a step of this job (%s), is answered; submit, query and cancel from the session", c.cfg.Step)
	}
	r, early, err := c.prepareSrun(req, stepFlags())
	if early != nil || err != nil {
		return derefReply(early), err
	}
	s := r.s
	args := append([]string{"--jobid=" + c.cfg.Step}, r.args...)
	rep := c.realWait(sh, "srun", args...)
	c.event(EventSubmit, map[string]any{"command": "srun", "step_of": c.cfg.Step, "args": req.Args, "dir": s.dir, "code": rep.Code})
	return rep, nil
}
