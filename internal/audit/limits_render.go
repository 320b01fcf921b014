package audit

// Messages of the events the writer records about itself: throttling, the
// end of the log and what it lost.

func suppressedMessage(f fields) string {
	return f.str("count") + " more " + f.str("of") + " events in " + f.str("seconds") + "s, counted, not logged one by one" +
		f.opt(" (e.g. %s)", "samples")
}

func logEndMessage(f fields) string {
	return "audit log ended: " + f.str("reason") + "; network closed and session stopped so that nothing goes unrecorded"
}

func droppedMessage(f fields) string {
	return f.str("count") + " events not logged after the audit log ended" + f.opt(" (%s)", "reason")
}

func gapMessage(f fields) string {
	return "a cut-off line of " + f.str("bytes") + " bytes was removed; its event is lost" + f.opt(" (%s)", "reason")
}
