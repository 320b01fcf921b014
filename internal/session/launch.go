package session

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/stockade-dev/stockade/internal/audit"
	"github.com/stockade-dev/stockade/internal/proc"
	"github.com/stockade-dev/stockade/internal/sandbox"
)

const supervisorArg = "__stockade_supervisor"

// supervisorLogRoom is the space kept allocated for supervisor.log.
const supervisorLogRoom = 64 << 10

func init() { sandbox.Entrypoints[supervisorArg] = supervisorMain }

// Launch creates the session and starts its supervisor detached (in a new
// session, its output in the session directory), and returns once the
// command has started, or with the reason it could not.
func Launch(cfg Config, sess Session) error {
	sess.ID, sess.State, sess.Started = cfg.ID, Starting, time.Now().UTC()
	if err := cfg.Store.Create(sess); err != nil {
		return err
	}
	fail := func(err error) error {
		now := time.Now().UTC()
		cfg.Store.Update(cfg.ID, func(s *Session) error {
			if s.State == Starting {
				s.State, s.Ended, s.Reason = Failed, &now, err.Error()
			}
			return nil
		})
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return fail(err)
	}
	cfgR, cfgW, err := os.Pipe()
	if err != nil {
		return fail(err)
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		cfgR.Close()
		cfgW.Close()
		return fail(err)
	}
	defer readyR.Close()
	logf, err := os.OpenFile(filepath.Join(cfg.Store.Dir(cfg.ID), "supervisor.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		cfgR.Close()
		cfgW.Close()
		readyW.Close()
		return fail(err)
	}
	defer logf.Close()
	// Room for what the supervisor says when the disk is full (why the
	// audit log ended): appends go into blocks the file already has.
	allocate(logf, supervisorLogRoom, true)
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		return fail(err)
	}
	defer devnull.Close()
	cmd := &exec.Cmd{
		Path:        self,
		Args:        []string{"stockade", supervisorArg},
		Env:         []string{},
		Dir:         "/",
		Stdin:       devnull,
		Stdout:      logf,
		Stderr:      logf,
		ExtraFiles:  []*os.File{cfgR, readyW},
		SysProcAttr: &syscall.SysProcAttr{Setsid: true},
	}
	err = cmd.Start()
	cfgR.Close()
	readyW.Close()
	if err != nil {
		cfgW.Close()
		return fail(fmt.Errorf("starting the session supervisor: %w", err))
	}
	// Record the supervisor before it can report: list must see it live.
	cfg.Store.Update(cfg.ID, func(s *Session) error {
		s.PID, s.PIDStart = cmd.Process.Pid, proc.StartTime(cmd.Process.Pid)
		return nil
	})
	go func() {
		json.NewEncoder(cfgW).Encode(cfg)
		cfgW.Close()
	}()
	go cmd.Wait() // reap it if it dies while we wait; it outlives us otherwise
	msg, _ := io.ReadAll(readyR)
	if len(msg) > 0 {
		return fail(errors.New(string(msg)))
	}
	if sess, err := cfg.Store.Load(cfg.ID); err != nil || sess.State == Starting && !proc.Alive(sess.PID, sess.PIDStart) {
		return fail(fmt.Errorf("the session supervisor exited before the command started; see %s", filepath.Join(cfg.Store.Dir(cfg.ID), "supervisor.log")))
	}
	return nil
}

// supervisorMain is the detached supervisor process.
func supervisorMain() int {
	cfgF := os.NewFile(3, "config")
	readyF := os.NewFile(4, "ready")
	var cfg Config
	err := json.NewDecoder(cfgF).Decode(&cfg)
	cfgF.Close()
	ready := func(err error) {
		if err != nil {
			readyF.WriteString(err.Error())
		}
		readyF.Close()
	}
	if err != nil {
		ready(fmt.Errorf("reading the session config: %w", err))
		return sandbox.ExitSetup
	}
	w, err := audit.Open(cfg.Store.Audit(cfg.ID), cfg.ID)
	if err != nil {
		ready(fmt.Errorf("opening the audit log: %w", err))
		return sandbox.ExitSetup
	}
	defer w.Close()
	defer giveBackRoom(os.Stderr)
	Supervise(cfg, w, ready)
	return 0
}

// giveBackRoom frees what was allocated past the end of supervisor.log (the
// supervisor's stdout and stderr) once nothing more will be written to it.
func giveBackRoom(f *os.File) {
	if st, err := f.Stat(); err == nil && st.Mode().IsRegular() {
		f.Truncate(st.Size())
	}
}
