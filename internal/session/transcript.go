package session

import "github.com/stockade-dev/stockade/internal/audit"

// A session's transcript is its terminal's output, as attached clients get
// it (after the terminal filter), kept next to its audit log for `stockade
// logs --output` after the session ended: audit/<id>.output and, once that
// reached transcriptMax bytes, the one before it, audit/<id>.output.1. At
// most 2 × transcriptMax bytes are kept; the oldest output goes first.
// `stockade delete` removes both.
//
// The supervisor writes them outside the sandbox, in the user's state
// directory, which the sandbox cannot reach; they are still opened,
// created and renamed below the audit directory without following a
// symbolic link (package beneath), and created new (O_EXCL) at every
// rotation, so that nothing planted there is written through.
const transcriptMax = 8 << 20

// Names of the transcript files below the audit directory.
func transcriptName(id string) string    { return id + ".output" }
func transcriptOldName(id string) string { return id + ".output.1" }

// record appends output to the transcript. A failed write (a full disk)
// ends the transcript, with a warning in the audit log; the session goes
// on.
func (s *supervisor) record(out []byte) {
	s.omu.Lock()
	defer s.omu.Unlock()
	if s.output == nil {
		return
	}
	if err := s.output.write(out); err != nil {
		s.output.close()
		s.output = nil
		s.log(audit.EventWarning, map[string]any{"message": "the session's output is no longer kept: " + err.Error()})
	}
}

func (s *supervisor) closeTranscript() {
	s.omu.Lock()
	defer s.omu.Unlock()
	if s.output != nil {
		s.output.close()
		s.output = nil
	}
}
