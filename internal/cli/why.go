package cli

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/stockade-dev/stockade/internal/denial"
	"github.com/stockade-dev/stockade/internal/termfilter"
)

type whyCmd struct {
	sessionFlag
	Last int  `short:"n" default:"20" help:"How many of the newest denials to print; 0 prints all."`
	JSON bool `name:"json" help:"Print one JSON object per denial."`
}

func (c *whyCmd) Help() string {
	return "Prints what the sandbox of a session (or a foreground run: see 'stockade list --all') refused, newest last:\n" +
		"time, how it was asked for, host:port, the rule that refused it, why, and the command that allows it.\n" +
		"Network denials for now: connections through the proxies and DNS names. Read from the session's audit\n" +
		"log, so it works after the session ended, until 'stockade prune'.\n\n" +
		"Inside the sandbox the agent reads the newest of them in " + denial.Path + "."
}

func (c *whyCmd) Run() error {
	if c.Last < 0 {
		return usageError{fmt.Errorf("-n %d: write a count of denials, or 0 for all", c.Last)}
	}
	logs := logsCmd{sessionFlag: c.sessionFlag}
	store, id, err := logs.resolveLogs()
	if err != nil {
		return err
	}
	f, err := os.Open(store.Audit(id))
	if err != nil {
		return fmt.Errorf("reading the audit log of session %s: %w", id, err)
	}
	defer f.Close()
	rep := denial.Read(f)
	ds := rep.Denials
	if c.Last > 0 && len(ds) > c.Last {
		ds = ds[len(ds)-c.Last:]
	}
	if c.JSON {
		enc := json.NewEncoder(termfilter.JSONWriter(os.Stdout)) // values a project or the sandbox chose: nothing a terminal acts on
		for _, d := range ds {
			if err := enc.Encode(d); err != nil {
				return err
			}
		}
		return nil
	}
	switch {
	case len(rep.Denials) == 0 && rep.Suppressed == 0:
		fmt.Printf("session %s: nothing was denied\n", id)
		return nil
	case len(ds) < len(rep.Denials):
		fmt.Printf("session %s: %d denials, the newest %d (newest last; -n 0 prints all):\n", id, len(rep.Denials), len(ds))
	default:
		fmt.Printf("session %s: %d denials (newest last):\n", id, len(ds))
	}
	for _, d := range ds {
		fmt.Println(d.Line())
	}
	if rep.Suppressed > 0 {
		fmt.Printf("and %d more, repeats the audit log counted without writing each ('stockade logs -s %s' shows which)\n", rep.Suppressed, id)
	}
	return nil
}
