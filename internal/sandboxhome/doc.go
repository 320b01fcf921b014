// Package sandboxhome places and fills the sandbox HOME: the persistent
// directory on the host that is mounted read-write as $HOME inside.
//
// Where: one HOME per project and per command (run, claude, codex, …),
// below stockade's data directory ($XDG_DATA_HOME/stockade):
//
//	project-home/<name>/<key>   the default; key is Key(workdir)
//	home/<name>                 one HOME for every project (shared_home, a loosening)
//
// A HOME is per project because whatever the sandboxed command leaves in
// it runs again in the next session: a shell rc, a git config with a pager
// or an fsmonitor, the agent's settings and hooks. Shared by every project,
// that would let one repository's agent plant code that runs in the
// sessions of all the others. The per-project HOMEs never lie below the
// shared ones (home/<name> was the only layout before, and a session may
// have filled it with anything, names of other projects' HOMEs among them),
// and a new one starts from the agent profile's first-run files only:
// nothing is copied from a HOME a sandbox could write.
//
// How: the sandboxed command can write everything below its HOME, so it may
// have planted a symlink (to the user's real ~/.codex, say) or a hard link
// where stockade writes next time. Every host-side write below the HOME goes
// through package beneath, which never follows a link; what stands in the
// way is handled as Home's methods say, and each case is named in a warning.
package sandboxhome
