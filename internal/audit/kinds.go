package audit

import (
	"fmt"
	"strings"
)

// Version is the value of the "v" field of every line this package writes.
const Version = 1

// Sources: the part of stockade that recorded an event.
const (
	SourceSupervisor = "supervisor"
	SourceInit       = "init"
	SourceTripwire   = "tripwire"
	SourceEgress     = "egress"
	SourceAuthProxy  = "authproxy"
	SourceSSHAgent   = "sshagent"
	// The proxies of a container engine (--containers): the pods' and the
	// registry proxy of the engine's pulls.
	SourcePod      = "pod"
	SourceRegistry = "registry"
	SourceSlurm    = "slurm"  // the Slurm chaperon (package slurm)
	SourceEngine   = "engine" // the container engine's hooks (package ocihook)
)

// Event names. The fields each one carries are listed in docs/audit.md; the
// renderer shows whichever of them are present.
const (
	EventStart            = "start"             // agent, workdir, command, loosened, policy
	EventStop             = "stop"              // reason, status, state
	EventRestart          = "restart"           // attempt, status, backoff_ms
	EventAttach           = "attach"            // pid, clients
	EventDetach           = "detach"            // pid, clients
	EventSignal           = "signal"            // signal, by
	EventInitFailure      = "init_failure"      // step, error, status
	EventWarning          = "warning"           // message: a downgrade or a limit not enforced
	EventTamper           = "tamper"            // path, op, action: the tripwire fired
	EventNetworkDenied    = "network_denied"    // host, port, reason
	EventNetworkRule      = "network_rule"      // action, rule, changed
	EventDNSDenied        = "dns_denied"        // name, qtype
	EventConnection       = "connection"        // host, port, bytes_in, bytes_out, duration_ms
	EventAuthRequest      = "auth_request"      // provider, method, path, status, model
	EventAuthDenied       = "auth_denied"       // provider, method, path, reason
	EventSSHSign          = "ssh_sign"          // fingerprint, key_type, kind, user, service, namespace, host_key, error
	EventSSHDenied        = "ssh_denied"        // request, reason, fingerprint
	EventFinding          = "finding"           // kind, path, rule, moved_to, detail: the checks at the end of a run
	EventSuppressed       = "suppressed"        // event, count, seconds, samples: throttled events counted, not written
	EventLogEnd           = "log_end"           // reason: the log has ended (cap reached, disk full, a write failed)
	EventDropped          = "dropped"           // count, reason: events not written after the end
	EventGap              = "gap"               // bytes, reason: a cut-off line was removed; its event is lost
	EventContainerRefused = "container_refused" // check, field, reason, container, image: an OCI hook refused a container
	// The Slurm chaperon's; package slurm names them too.
	EventSlurmSubmit  = "slurm_submit"  // command, job, script, sha256, args, dir, stored
	EventSlurmRefused = "slurm_refused" // command, args, reason
	EventSlurmCancel  = "slurm_cancel"  // command, jobs, args
	EventSlurmControl = "slurm_control" // command, jobs, args: hold, release, requeue
)

// kind is what the package knows about one event name.
type kind struct {
	// security events are fsync'd (log and head) before Log returns.
	security bool
	// message renders the fields for humans; nil means the generic form.
	message func(f fields) string
	// throttle, when set, rate-limits the event: it returns what a
	// summary shows of one event, and false for one not to throttle.
	throttle func(f map[string]any) (sample string, ok bool)
	// final events may use the last of the reserve after the log ended.
	final bool
}

// kinds is the event table. Only events that are frequent and carry no
// security decision may skip fsync: a lost "connection" line costs little,
// a lost "tamper" line is the one that mattered.
var kinds = map[string]kind{
	EventStart:            {security: true, message: startMessage},
	EventStop:             {security: true, message: stopMessage, final: true},
	EventRestart:          {security: true, message: restartMessage},
	EventAttach:           {security: true, message: clientMessage("client attached")},
	EventDetach:           {security: true, message: clientMessage("client detached")},
	EventSignal:           {security: true, message: signalMessage},
	EventInitFailure:      {security: true, message: initFailureMessage},
	EventWarning:          {security: true, message: warningMessage},
	EventTamper:           {security: true, message: tamperMessage},
	EventNetworkDenied:    {security: true, message: networkDeniedMessage, throttle: hostPortSample},
	EventConnection:       {security: false, message: connectionMessage, throttle: failedConnectionSample},
	EventNetworkRule:      {security: true, message: networkRuleMessage},
	EventDNSDenied:        {security: true, message: dnsDeniedMessage},
	EventAuthRequest:      {security: false, message: authRequestMessage},
	EventAuthDenied:       {security: true, message: authDeniedMessage, throttle: authDeniedSample},
	EventSSHSign:          {security: true, message: sshSignMessage, throttle: failedSignSample},
	EventSSHDenied:        {security: true, message: sshDeniedMessage, throttle: sshDeniedSample},
	EventFinding:          {security: true, message: findingMessage},
	EventSuppressed:       {security: true, message: suppressedMessage},
	EventLogEnd:           {security: true, message: logEndMessage, final: true},
	EventDropped:          {security: true, message: droppedMessage, final: true},
	EventSlurmSubmit:      {security: true, message: slurmMessage("submitted")},
	EventSlurmRefused:     {security: true, message: slurmMessage("REFUSED"), throttle: slurmRefusedSample},
	EventSlurmCancel:      {security: true, message: slurmMessage("cancelled")},
	EventSlurmControl:     {security: true, message: slurmMessage("control")},
	EventGap:              {security: true, message: gapMessage, final: true},
	EventContainerRefused: {security: true, message: containerRefusedMessage, throttle: checkSample},
}

// throttleOf returns the event's throttle, nil when it has none.
func throttleOf(event string) func(map[string]any) (string, bool) { return kinds[event].throttle }

// isFinal reports whether event may use the last of the reserve.
func isFinal(event string) bool { return kinds[event].final }

// IsSecurity reports whether event is fsync'd when logged. Unknown events
// are: a new event that nobody classified must not be the one that is lost.
func IsSecurity(event string) bool {
	k, ok := kinds[event]
	return !ok || k.security
}

// reserved are the keys of every line, in the order they are written (fields
// go between "event" and "prev").
var reserved = []string{"v", "seq", "time", "session", "source", "event", "prev", "hash"}

// checkKey rejects a field key that is reserved or that is not a plain
// lower-case identifier. Comparing case-insensitively matters: Go's
// encoding/json matches struct fields that way, so a field "Hash" would
// land in a reader's Hash.
func checkKey(key string) error {
	for _, r := range reserved {
		if strings.EqualFold(key, r) {
			return fmt.Errorf("field %q is reserved", key)
		}
	}
	if !isName(key) {
		return fmt.Errorf("field %q is not a name of the form [a-z][a-z0-9_]{0,63}", key)
	}
	return nil
}

// isName reports whether s matches [a-z][a-z0-9_]{0,63}.
func isName(s string) bool {
	if s == "" || len(s) > 64 || s[0] < 'a' || s[0] > 'z' {
		return false
	}
	for i := 1; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}
