// Package audit is the tamper-evident audit log of a session: one JSON object
// per line, each line hash-chained to the one before it, so that a changed,
// removed, inserted or reordered line is found by Verify and named by its line
// number.
//
// A supervisor opens the log once, for writing, and records events from any
// number of goroutines:
//
//	w, err := audit.Open(store.Audit(id), id) // takes an exclusive flock
//	if err != nil {
//		return err // ErrLocked: another supervisor writes this log
//	}
//	defer w.Close()
//	w.Log(audit.SourceSupervisor, audit.EventStart, map[string]any{
//		"agent": "claude", "workdir": "/home/u/proj", "loosened": []string{"allow_hooks"},
//	})
//
// Each line is
//
//	{"v":1,"seq":N,"time":"…","session":"…","source":"…","event":"…",<fields…>,"prev":"<hex>","hash":"<hex>"}
//
// where hash is the hex SHA-256 of the line's exact bytes with the final
// `,"hash":"…"` removed (so it covers prev, and prev is the hash of the line
// before; the first line's prev is 64 zeros). The hash is over the bytes as
// written, never over a re-encoding, so a log can be checked by hand with sed,
// jq and sha256sum (docs/audit.md shows how).
//
// Whether an event is fsync'd is decided by the event name (the table in
// kinds.go), not by the caller, so that a caller cannot forget: start, stop,
// signals, init failures, tripwire and denial events reach the disk before Log
// returns; high-volume events such as "connection" do not. An event name the
// table does not know is treated as a security event.
//
// Beside the log, the writer keeps a small head file (HeadPath: the log's path
// with ".head" appended) holding the last seq and hash. A hash chain alone
// cannot tell a log whose last lines were cut off from a log that simply ended
// there; with the head, Verify can.
//
// Limitations. The chain has no secret key: it detects edits made without
// recomputing the chain (a slip, a careless edit, a partial overwrite), not a
// party who can rewrite the whole file and its head. Such a party needs the
// user's own rights on the state directory, which the sandboxed agent never
// has (the directory is not mounted in the sandbox). A copy of the head taken
// elsewhere (Writer.Head) anchors the log against that too. Lines written
// after a head was read are accepted, because a live writer appends to the log
// before it updates the head.
//
// Reading needs no lock: Follow tails the log while the writer appends, with
// inotify where it exists and polling otherwise.
package audit
