package audit

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// allEvents lists every event constant; the table test below keeps it and
// the kinds table in step.
var allEvents = []string{
	EventStart, EventStop, EventRestart, EventAttach, EventDetach, EventSignal, EventInitFailure,
	EventWarning, EventTamper, EventNetworkDenied, EventNetworkRule, EventDNSDenied, EventConnection,
	EventAuthRequest, EventAuthDenied, EventSSHSign, EventSSHDenied, EventFinding, EventSuppressed, EventLogEnd, EventDropped, EventGap,
	EventSlurmSubmit, EventSlurmRefused, EventSlurmCancel, EventSlurmControl,
	EventContainerRefused,
}

func TestKindsTable(t *testing.T) {
	if len(kinds) != len(allEvents) {
		t.Errorf("kinds has %d events, the constants %d", len(kinds), len(allEvents))
	}
	for _, e := range allEvents {
		k, ok := kinds[e]
		if !ok || k.message == nil || !isName(e) {
			t.Errorf("event %q: in table %v, has message %v, is a name %v", e, ok, k.message != nil, isName(e))
		}
	}
	// Only the high-volume, decision-free events skip fsync.
	for _, e := range allEvents {
		want := e != EventConnection && e != EventAuthRequest
		if IsSecurity(e) != want {
			t.Errorf("IsSecurity(%q) = %v, want %v", e, !want, want)
		}
	}
	if !IsSecurity("something_new") {
		t.Error("an unknown event is not fsync'd")
	}
}

func TestRender(t *testing.T) {
	tests := []struct {
		source, event string
		fields        string // JSON, as it would be read back
		want          string // after "stockade: 2026-11-22T10:00:00Z "
	}{
		{SourceSupervisor, EventStart, `{"agent":"claude","workdir":"/home/u/proj","loosened":["allow_hooks"]}`,
			"supervisor: session started: claude in /home/u/proj (loosened: allow_hooks)"},
		{SourceSupervisor, EventStart, `{"command":["sh","-c","true"],"workdir":"/p","loosened":[]}`,
			"supervisor: session started: sh -c true in /p"},
		{SourceSupervisor, EventStop, `{"reason":"exited","status":0,"state":"exited"}`,
			"supervisor: session stopped: exited (exit status 0, state exited)"},
		{SourceSupervisor, EventRestart, `{"status":1,"attempt":2,"backoff_ms":2000}`,
			"supervisor: command restarted after exit status 1 (attempt 2, backoff 2000ms)"},
		{SourceSupervisor, EventAttach, `{"pid":4242,"clients":1}`, "supervisor: client attached (pid 4242, 1 attached now)"},
		{SourceSupervisor, EventDetach, `{"pid":4242,"clients":0}`, "supervisor: client detached (pid 4242, 0 attached now)"},
		{SourceSupervisor, EventSignal, `{"signal":"SIGTERM","by":"stop"}`, "supervisor: signal SIGTERM by stop"},
		{SourceSupervisor, EventInitFailure, `{"step":"landlock","error":"landlock: ABI 2 < 3","status":125}`,
			"supervisor: sandbox setup failed at step landlock: landlock: ABI 2 < 3 (exit status 125)"},
		{SourceSupervisor, EventWarning, `{"message":"memory limit NOT enforced"}`, "supervisor: warning: memory limit NOT enforced"},
		{SourceSSHAgent, EventSSHSign, `{"fingerprint":"SHA256:abc","key_type":"ssh-ed25519","kind":"ssh-userauth","user":"git","service":"ssh-connection","host_key":"SHA256:def"}`,
			"sshagent: ssh agent signed with SHA256:abc (ssh-ed25519): ssh-userauth user git service ssh-connection host key SHA256:def"},
		{SourceSSHAgent, EventSSHSign, `{"fingerprint":"SHA256:abc","kind":"sshsig","namespace":"git","error":"the user's agent refused"}`,
			"sshagent: ssh agent signed with SHA256:abc: sshsig namespace git: FAILED: the user's agent refused"},
		{SourceSSHAgent, EventSSHDenied, `{"request":"remove all identities","reason":"not forwarded"}`,
			"sshagent: ssh agent refused remove all identities: not forwarded"},
		{SourceEngine, EventContainerRefused, `{"check":"capabilities","field":"process.capabilities.bounding","reason":"CAP_SYS_ADMIN is beyond the default set","container":"0ebd","image":"localhost/img:latest"}`,
			"engine: container refused (check capabilities): process.capabilities.bounding: CAP_SYS_ADMIN is beyond the default set (container 0ebd, image localhost/img:latest)"},
		{SourceTripwire, EventTamper, `{"path":"/home/u/.bashrc","op":"write","action":"session killed"}`,
			"tripwire: protected path changed: /home/u/.bashrc (write); session killed"},
		{SourceEgress, EventNetworkDenied, `{"host":"169.254.169.254","port":80,"reason":"link-local"}`,
			"egress: network denied: 169.254.169.254:80 (link-local)"},
		{SourceEgress, EventConnection, `{"host":"api.anthropic.com","port":443,"bytes_in":10,"bytes_out":20,"duration_ms":5}`,
			"egress: connection: api.anthropic.com:443 (10 bytes in, 20 bytes out, 5ms)"},
		{SourceAuthProxy, EventAuthRequest, `{"provider":"anthropic","method":"POST","path":"/v1/messages","status":200,"model":"m"}`,
			"authproxy: auth proxy anthropic: POST /v1/messages -> 200 (m)"},
		{SourceAuthProxy, EventAuthRequest, `{"provider":"openai","method":"POST","path":"/v1/responses","status":200,"request_bytes":120,"response_bytes":4096,"duration_ms":830}`,
			"authproxy: auth proxy openai: POST /v1/responses -> 200 (120 bytes out, 4096 bytes in, 830ms)"},
		{SourceEgress, EventDNSDenied, `{"name":"evil.example","qtype":"A","rule":"","reason":"not on the allow list"}`,
			"egress: DNS query refused: evil.example (A): not on the allow list"},
		{SourceEgress, EventDNSDenied, `{"reason":"rate limited (100/s, burst 200)","dropped":7}`,
			"egress: DNS query refused: rate limited (100/s, burst 200) (7 queries)"},
		{SourceSupervisor, EventStart, `{"agent":"codex","command":["codex","exec","hi"],"workdir":"/p","loosened":[]}`,
			"supervisor: session started: codex exec hi in /p"},
		{SourceAuthProxy, EventAuthDenied, `{"provider":"anthropic","method":"POST","path":"/x","reason":"no dummy key"}`,
			"authproxy: auth proxy refused anthropic: POST /x: no dummy key"},
		{SourceSupervisor, EventFinding, `{"kind":"quarantined","path":"/w/.npmrc","rule":"masked: .npmrc","detail":"renamed"}`,
			"supervisor: quarantined: /w/.npmrc (masked: .npmrc): renamed"},
		{SourceSupervisor, EventStop, `{}`, "supervisor: session stopped"},
		{SourceSupervisor, "frobnicate", `{"b":"two words","a":1,"c":[1,"x"],"d":"plain"}`,
			`supervisor: frobnicate a=1 b="two words" c=[1,"x"] d=plain`},
		{SourceEgress, EventNetworkDenied, `{"host":"evil\u001b[2J\u202e.com"}`,
			`egress: network denied: evil\x1b[2J\u202e.com`},
		{SourceSlurm, EventSlurmSubmit, `{"command":"sbatch","job":"12","args":["--wrap","echo hi"]}`,
			`slurm: submitted job 12: sbatch --wrap "echo hi"`},
		{SourceSlurm, EventSlurmSubmit, `{"command":"srun","step_of":"12","args":["-n","2","hostname"],"code":0}`,
			`slurm: submitted a step of job 12: srun -n 2 hostname`},
	}
	for _, tt := range tests {
		t.Run(tt.event, func(t *testing.T) {
			dec := json.NewDecoder(strings.NewReader(tt.fields))
			dec.UseNumber()
			var f map[string]any
			if err := dec.Decode(&f); err != nil {
				t.Fatal(err)
			}
			ev := Event{Time: time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC), Source: tt.source, Event: tt.event, Fields: f}
			if got, want := Render(ev), "stockade: 2026-11-22T10:00:00Z "+tt.want; got != want {
				t.Errorf("Render:\n got %s\nwant %s", got, want)
			}
		})
	}
}

// TestRenderHidden: no character of the classes a terminal acts on or
// shows as nothing reaches the output raw, whichever field holds it.
func TestRenderHidden(t *testing.T) {
	listed := []rune{0x2028, 0x2029, 0x200e, 0x200f, 0x061c, 0xfeff, 0x202e, 0x2066, 0x200b, 0x00ad, 0x180e, 0xe0001, 0x3164, 0xfe0f}
	var all []rune
	for _, tab := range hidden {
		for _, r16 := range tab.R16 {
			for r := rune(r16.Lo); r <= rune(r16.Hi); r += rune(r16.Stride) {
				all = append(all, r)
			}
		}
		for _, r32 := range tab.R32 {
			for r := rune(r32.Lo); r <= rune(r32.Hi); r += rune(r32.Stride) {
				all = append(all, r)
			}
		}
	}
	for _, r := range append(listed, all...) {
		if r < 0x20 || r == 0x7f || !utf8.ValidRune(r) {
			continue // C0 and DEL: TestRender; surrogates cannot be in a string
		}
		name := "evil" + string(r) + ".com"
		ev := Event{Source: SourceEgress, Event: EventNetworkDenied, Fields: map[string]any{"host": name, "reason": name}}
		if got := Render(ev); strings.ContainsRune(got, r) {
			t.Errorf("U+%04X is shown raw: %q", r, got)
		}
	}
	ev := Event{Source: SourceEgress, Event: EventNetworkDenied, Fields: map[string]any{"host": "a\u2028b\u200ec\U000e0001d"}}
	if got, want := Render(ev), `a\u2028b\u200ec\U000e0001d`; !strings.HasSuffix(got, want) {
		t.Errorf("Render: %q, want it to end in %q", got, want)
	}
}

// TestRenderReadBack renders what a writer wrote, through the file.
func TestRenderReadBack(t *testing.T) {
	path, _ := writeLog(t, 1)
	rep, _ := VerifyFile(path)
	f := strings.NewReader(strings.Join(readLines(t, path), "\n") + "\n")
	for ev, err := range ReadEvents(f) {
		if err != nil {
			t.Fatal(err)
		}
		want := `stockade: 2026-11-22T10:00:00Z supervisor: step n=1 note="event 1"`
		if got := Render(ev); got != want || ev.Hash != rep.LastHash {
			t.Errorf("Render = %s, want %s", got, want)
		}
	}
}
