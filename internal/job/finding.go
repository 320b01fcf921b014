package job

// Finding is what the checks at the end of a run found on the host: a path
// the command created or changed that a tool outside the sandbox would act
// on. Each is reported on its own line and, for a session, recorded in its
// audit log.
type Finding struct {
	Kind    string `json:"kind"`
	Path    string `json:"path"`
	Rule    string `json:"rule,omitempty"`     // which protection or mask the path falls under
	MovedTo string `json:"moved_to,omitempty"` // where a quarantined path went
	Detail  string `json:"detail"`             // one line: what was found, what was done, what to do
}

// Kinds of findings.
const (
	FindingQuarantined = "quarantined" // moved aside, nothing lost
	FindingUnhandled   = "unhandled"   // could not be moved aside: the user must look
	// FindingReview: a file the user runs soon that the command wrote,
	// legitimately its work (a CI workflow, a venv script); Detail is
	// the whole line, with the path.
	FindingReview = "review"
	// FindingRemoved: a setuid or setgid bit, or file capabilities, that
	// a container set on a file of the workdir, removed.
	FindingRemoved = "removed"
)

// ReviewLine begins the line of a plain review finding (FindingReview):
// work of the command's the user will run soon, reported, not acted on.
const ReviewLine = "REVIEW: "

// String is the finding's line, without the "stockade: " prefix.
func (f Finding) String() string {
	label := "QUARANTINED"
	switch f.Kind {
	case FindingUnhandled:
		label = "REVIEW NOW"
	case FindingRemoved:
		label = "REMOVED"
	case FindingReview:
		return ReviewLine + f.Detail
	}
	s := label + ": " + f.Path
	if f.Rule != "" {
		s += " (" + f.Rule + ")"
	}
	return s + ": " + f.Detail
}
