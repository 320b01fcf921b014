package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/stockade-dev/stockade/internal/audit"
	"github.com/stockade-dev/stockade/internal/session"
	"github.com/stockade-dev/stockade/internal/termfilter"
)

type logsCmd struct {
	sessionFlag
	Follow bool `short:"f" help:"Keep printing events as they are written, until interrupted."`
	JSON   bool `name:"json" help:"Print the raw JSON lines."`
	Verify bool `help:"Check the hash chain (and the head) and report every changed, removed or reordered line."`
	Output bool `help:"Print the session's terminal output instead (the last 16 MiB of it), as the terminal filter passed it."`
	Plain  bool `help:"With --output: plain text, without escape sequences, control characters and lines redrawn over themselves."`
}

func (c *logsCmd) Help() string {
	return "Prints a session's audit log: one line per event, 'stockade: <time> <source>: <message>'.\nThe log outlives 'stockade delete'; only 'stockade prune' removes it.\n\n--output prints what the session's command wrote to its terminal (kept up to 2 × 8 MiB,\nthe oldest dropped first; removed by 'stockade delete'). --plain removes escape sequences\n(colours, cursor movement, titles), control characters and lines redrawn over themselves."
}

func (c *logsCmd) Run() error {
	store, id, err := c.resolveLogs()
	if err != nil {
		return err
	}
	if c.Plain && !c.Output {
		fmt.Fprintln(os.Stderr, "stockade: --plain goes with --output: stockade logs -s ID --output --plain")
		return exitError{2}
	}
	if c.Output {
		return c.output(store, id)
	}
	path := store.Audit(id)
	if c.Verify {
		rep, err := audit.VerifyFile(path)
		if err != nil {
			return err
		}
		for _, g := range rep.Gaps {
			fmt.Printf("%s: gap recovered at %s\n", path, g)
		}
		for _, e := range rep.Ended {
			fmt.Printf("%s: ended at %s\n", path, e)
		}
		if rep.OK() {
			fmt.Printf("%s: %d events, chain intact (last seq %d)\n", path, rep.Lines, rep.LastSeq)
			return nil
		}
		for _, p := range rep.Problems {
			fmt.Printf("%s: %s\n", path, p)
		}
		return exitError{1}
	}
	print := func(e audit.Event) error {
		if c.JSON {
			_, err := os.Stdout.Write(append(e.Raw, '\n'))
			return err
		}
		_, err := fmt.Println(audit.Render(e))
		return err
	}
	if c.Follow {
		ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
		defer stop()
		return audit.Follow(ctx, path, true, print)
	}
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("reading the audit log of session %s: %w", id, err)
	}
	defer f.Close()
	for e, err := range audit.ReadEvents(f) {
		if err != nil {
			return fmt.Errorf("%s: %w; 'stockade logs -s %s --verify' checks the whole log", path, err, id)
		}
		if err := print(e); err != nil {
			return err
		}
	}
	return nil
}

// resolveLogs finds the session, or only its audit log after delete.
func (c *logsCmd) resolveLogs() (session.Store, string, error) {
	store, id, err := c.resolve()
	if err == nil {
		return store, id, nil
	}
	home := realHome()
	store = session.NewStore(stateHome(home))
	if _, serr := os.Stat(store.Audit(c.Session)); serr == nil {
		return store, c.Session, nil
	}
	return store, "", errors.Join(err)
}

// output prints the session's transcript: through the terminal filter
// (the policy's --terminal raw may have let anything in), or as plain text.
func (c *logsCmd) output(store session.Store, id string) error {
	if c.Plain {
		w := termfilter.NewPlainWriter(os.Stdout)
		if err := session.CopyOutput(store, id, w); err != nil {
			return err
		}
		return w.Close()
	}
	return session.CopyOutput(store, id, termfilter.NewWriter(os.Stdout, nil))
}
