package sshagent

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stockade-dev/stockade/internal/testenv"
)

// events records what the filter audits.
type events struct {
	mu  sync.Mutex
	all []map[string]any
}

func (e *events) log(ev string, f map[string]any) {
	e.mu.Lock()
	defer e.mu.Unlock()
	g := map[string]any{"event": ev}
	for k, v := range f {
		g[k] = v
	}
	e.all = append(e.all, g)
}

func (e *events) find(ev string) []map[string]any {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []map[string]any
	for _, f := range e.all {
		if f["event"] == ev {
			out = append(out, f)
		}
	}
	return out
}

// serveFilter serves a filter of upstream on a new socket.
func serveFilter(t *testing.T, upstream string, keys ...string) (string, *events) {
	t.Helper()
	ev := &events{}
	a, err := New(Config{Upstream: upstream, Keys: keys, Audit: ev.log})
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "stk-filter-")
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(dir, "agent.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Serve(ln) }()
	t.Cleanup(func() {
		a.Close()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
		os.RemoveAll(dir)
	})
	return sock, ev
}

func sshTool(t *testing.T, sock, stdin string, name string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), "SSH_AUTH_SOCK="+sock, "SSH_ASKPASS=", "DISPLAY=")
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

func TestFilterWithOpenSSH(t *testing.T) {
	up := testenv.StartSSHAgent(t)
	sock, ev := serveFilter(t, up.Sock)

	out, err := sshTool(t, sock, "", "ssh-add", "-l")
	if err != nil || !strings.Contains(out, up.Fingerprint) {
		t.Fatalf("ssh-add -l through the filter: %v\n%s", err, out)
	}
	// Refused: every change to the user's agent.
	other := filepath.Join(t.TempDir(), "other")
	if out, err := sshTool(t, sock, "", "ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", other); err != nil {
		t.Fatal(err, out)
	}
	for _, c := range []struct {
		name  string
		stdin string
		args  []string
	}{
		{"remove all", "", []string{"-D"}},
		{"remove one", "", []string{"-d", up.PubKey}},
		{"add", "", []string{other}},
		{"lock", "pw\npw\n", []string{"-x"}},
		{"unlock", "pw\n", []string{"-X"}},
	} {
		if out, err := sshTool(t, sock, c.stdin, "ssh-add", c.args...); err == nil {
			t.Errorf("ssh-add %s (%s) worked through the filter:\n%s", strings.Join(c.args, " "), c.name, out)
		}
	}
	// The user's agent still holds its key, and only it.
	out, err = sshTool(t, up.Sock, "", "ssh-add", "-l")
	if err != nil || !strings.Contains(out, up.Fingerprint) || strings.Count(strings.TrimSpace(out), "\n") != 0 {
		t.Fatalf("the user's agent changed: %v\n%s", err, out)
	}
	if n := len(ev.find("ssh_denied")); n < 5 {
		t.Errorf("%d ssh_denied events for 5 refusals: %v", n, ev.all)
	}

	// A signature, made by the user's agent with the key.
	msg := filepath.Join(t.TempDir(), "msg")
	os.WriteFile(msg, []byte("hello\n"), 0o600)
	if out, err := sshTool(t, sock, "", "ssh-keygen", "-Y", "sign", "-n", "file", "-f", pubOnly(t, up), msg); err != nil {
		t.Fatalf("ssh-keygen -Y sign through the filter: %v\n%s", err, out)
	}
	signers := filepath.Join(t.TempDir(), "signers")
	pub, _ := os.ReadFile(up.PubKey)
	os.WriteFile(signers, append([]byte("me@example "), pub...), 0o600)
	vf := exec.Command("ssh-keygen", "-Y", "verify", "-f", signers, "-I", "me@example", "-n", "file", "-s", msg+".sig")
	vf.Stdin = bytes.NewReader([]byte("hello\n"))
	if out, err := vf.CombinedOutput(); err != nil {
		t.Fatalf("the signature does not verify: %v\n%s", err, out)
	}
	signs := ev.find("ssh_sign")
	if len(signs) != 1 || signs[0]["fingerprint"] != up.Fingerprint || signs[0]["kind"] != "sshsig" ||
		signs[0]["namespace"] != "file" || signs[0]["error"] != nil {
		t.Errorf("ssh_sign events: %v", signs)
	}
}

func TestFilterOffersOnlyNamedKeys(t *testing.T) {
	up := testenv.StartSSHAgent(t)
	// A fingerprint of another key: the agent's own is hidden.
	other := Fingerprint([]byte("not a key of the agent"))
	sock, ev := serveFilter(t, up.Sock, other)
	out, err := sshTool(t, sock, "", "ssh-add", "-l")
	if err == nil || strings.Contains(out, up.Fingerprint) {
		t.Fatalf("ssh-add -l listed a key not named: %v\n%s", err, out)
	}
	msg := filepath.Join(t.TempDir(), "msg")
	os.WriteFile(msg, []byte("hello\n"), 0o600)
	if out, err := sshTool(t, sock, "", "ssh-keygen", "-Y", "sign", "-n", "file", "-f", pubOnly(t, up), msg); err == nil {
		t.Fatalf("a key not named signed:\n%s", out)
	}
	// Asked directly, past the list: refused before the user's agent.
	conn, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	pub, _ := os.ReadFile(up.PubKey)
	blob, err := base64.StdEncoding.DecodeString(strings.Fields(string(pub))[1])
	if err != nil {
		t.Fatal(err)
	}
	req := appendString(appendString([]byte{msgSignRequest}, blob), []byte("data"))
	req = binary.BigEndian.AppendUint32(req, 0)
	writeMessage(conn, req)
	if reply, err := readMessage(conn); err != nil || !bytes.Equal(reply, failure) {
		t.Fatalf("sign with a key not named: %v %v", reply, err)
	}
	d := ev.find("ssh_denied")
	if len(d) == 0 || d[len(d)-1]["fingerprint"] != up.Fingerprint {
		t.Errorf("no ssh_denied event for the sign request: %v", ev.all)
	}
	if len(ev.find("ssh_sign")) != 0 {
		t.Errorf("a refused sign was recorded as signed: %v", ev.all)
	}

	// Named, it is offered.
	sock, _ = serveFilter(t, up.Sock, up.Fingerprint)
	if out, err := sshTool(t, sock, "", "ssh-add", "-l"); err != nil || !strings.Contains(out, up.Fingerprint) {
		t.Fatalf("ssh-add -l with the key named: %v\n%s", err, out)
	}
}

// pubOnly copies the agent's public key where no private key lies beside
// it: ssh-keygen -Y sign -f falls back to a private key file it finds.
func pubOnly(t *testing.T, up testenv.SSHAgent) string {
	t.Helper()
	b, err := os.ReadFile(up.PubKey)
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "key.pub")
	if err := os.WriteFile(p, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func frame(msg []byte) []byte {
	return binary.BigEndian.AppendUint32(nil, uint32(len(msg)))
}

// TestFilterMalformed sends what a hostile client might; each gets
// SSH_AGENT_FAILURE (or the connection closes) and the filter goes on
// serving.
func TestFilterMalformed(t *testing.T) {
	up := testenv.StartSSHAgent(t)
	sock, _ := serveFilter(t, up.Sock)
	str := func(s string) []byte { return appendString(nil, []byte(s)) }
	cases := []struct {
		name string
		raw  []byte // written as is
	}{
		{"zero length", []byte{0, 0, 0, 0}},
		{"over the maximum", []byte{0, 4, 0, 1, msgRequestIdentities}},
		{"huge length", []byte{0xff, 0xff, 0xff, 0xff}},
		{"identities with a tail", append(frame([]byte{11, 0}), 11, 0)},
		{"sign: no fields", append(frame([]byte{13}), 13)},
		{"sign: string past the end", append(frame([]byte{13, 0, 0, 1, 0}), 13, 0, 0, 1, 0)},
		{"sign: string length 2^32-1", append(frame([]byte{13, 0xff, 0xff, 0xff, 0xff}), 13, 0xff, 0xff, 0xff, 0xff)},
		{"extension: no name", append(frame([]byte{27}), 27)},
		{"session-bind: short", func() []byte {
			m := append([]byte{27}, str(sessionBindExtension)...)
			m = append(m, str("k")...)
			return append(frame(m), m...)
		}()},
		{"extension: query", func() []byte {
			m := append([]byte{27}, str("query")...)
			return append(frame(m), m...)
		}()},
		{"unknown type", append(frame([]byte{200}), 200)},
		{"SSH1 remove all", append(frame([]byte{9}), 9)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			conn, err := net.Dial("unix", sock)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.Write(c.raw)
			reply, err := readMessage(conn)
			if err == nil && !bytes.Equal(reply, failure) {
				t.Errorf("answer %v, want SSH_AGENT_FAILURE", reply)
			}
		})
	}
	// Still serving.
	if out, err := sshTool(t, sock, "", "ssh-add", "-l"); err != nil || !strings.Contains(out, up.Fingerprint) {
		t.Fatalf("the filter stopped serving: %v\n%s", err, out)
	}
}

func TestFilterCutConnection(t *testing.T) {
	up := testenv.StartSSHAgent(t)
	sock, _ := serveFilter(t, up.Sock)
	for _, raw := range [][]byte{{0, 0}, {0, 0, 0, 9, 13, 0}} {
		conn, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		conn.Write(raw)
		conn.Close()
	}
	if out, err := sshTool(t, sock, "", "ssh-add", "-l"); err != nil || !strings.Contains(out, up.Fingerprint) {
		t.Fatalf("the filter stopped serving: %v\n%s", err, out)
	}
}

func TestSignedData(t *testing.T) {
	str := func(s string) []byte { return appendString(nil, []byte(s)) }
	login := func(method string, extra ...[]byte) []byte {
		b := str("sessionid")
		b = append(b, userAuthRequest)
		b = append(b, str("git")...)
		b = append(b, str("ssh-connection")...)
		b = append(b, str(method)...)
		b = append(b, 1)
		b = append(b, str("ssh-ed25519")...)
		b = append(b, str("KEY")...)
		for _, e := range extra {
			b = append(b, e...)
		}
		return b
	}
	for _, c := range []struct {
		name string
		data []byte
		want map[string]any
	}{
		{"login", login("publickey"), map[string]any{"kind": "ssh-userauth", "user": "git", "service": "ssh-connection"}},
		{"host-bound login", login(hostboundPublicKeyAlg, str("HOSTKEY")),
			map[string]any{"kind": "ssh-userauth", "user": "git", "service": "ssh-connection", "host_key": Fingerprint([]byte("HOSTKEY"))}},
		{"sshsig", append([]byte(sshsigMagic), str("git")...), map[string]any{"kind": "sshsig", "namespace": "git"}},
		{"sshsig cut", []byte(sshsigMagic + "\x00"), map[string]any{"kind": "other"}},
		{"garbage", []byte("\x00\x00\x00\x01"), map[string]any{"kind": "other"}},
		{"control characters", append([]byte(sshsigMagic), str("a\nb\x1b")...), map[string]any{"kind": "sshsig", "namespace": "a?b?"}},
	} {
		got := signedData(c.data)
		if len(got) != len(c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
			continue
		}
		for k, v := range c.want {
			if got[k] != v {
				t.Errorf("%s: %v, want %v", c.name, got, c.want)
			}
		}
	}
}

func TestValidFingerprint(t *testing.T) {
	good := Fingerprint([]byte("x"))
	for s, want := range map[string]bool{
		good: true, strings.TrimPrefix(good, "SHA256:"): false, "MD5:aa:bb": false,
		"SHA256:": false, good + "A": false, "SHA256:" + strings.Repeat("!", 43): false,
	} {
		if ValidFingerprint(s) != want {
			t.Errorf("ValidFingerprint(%q) = %v", s, !want)
		}
	}
}

// TestFilterCap: connections over the cap are refused, and the filter
// serves again once some close.
func TestFilterCap(t *testing.T) {
	up := testenv.StartSSHAgent(t)
	ev := &events{}
	a, err := New(Config{Upstream: up.Sock, Audit: ev.log, MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	sock := filepath.Join(t.TempDir(), "a.sock")
	ln, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	go a.Serve(ln)
	defer a.Close()
	list := func(c net.Conn) []byte {
		writeMessage(c, []byte{msgRequestIdentities})
		reply, _ := readMessage(c)
		return reply
	}
	var held []net.Conn
	for range 2 {
		c, err := net.Dial("unix", sock)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if r := list(c); len(r) == 0 || r[0] != msgIdentitiesAnswer {
			t.Fatalf("under the cap: %v", r)
		}
		held = append(held, c)
	}
	over, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	if r, _ := readMessage(over); !bytes.Equal(r, failure) {
		t.Errorf("over the cap: %v, want SSH_AGENT_FAILURE", r)
	}
	over.Close()
	if len(ev.find("warning")) != 1 {
		t.Errorf("no warning at the cap: %v", ev.all)
	}
	held[0].Close()
	// Its place is free once the filter has seen it close.
	for deadline := time.Now().Add(10 * time.Second); a.clients.Open() >= 2; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the closed connection still holds its place")
		}
	}
	if out, err := sshTool(t, sock, "", "ssh-add", "-l"); err != nil || !strings.Contains(out, up.Fingerprint) {
		t.Errorf("after a close: %v\n%s", err, out)
	}
}

// TestFilterPipelined writes requests back to back in one write, and then
// one byte at a time: each is framed on its own, answered in order, and
// the ones that would change the user's agent (remove, lock) between the
// allowed ones never reach it.
func TestFilterPipelined(t *testing.T) {
	up := testenv.StartSSHAgent(t)
	sock, _ := serveFilter(t, up.Sock)
	conn, err := net.Dial("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	msg := func(b ...byte) []byte { return append(frame(b), b...) }
	if err := writeMessage(conn, []byte{msgRequestIdentities}); err != nil {
		t.Fatal(err)
	}
	reply, err := readMessage(conn)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := parseIdentities(reply)
	if err != nil || len(ids) != 1 {
		t.Fatalf("identities %v, %v", ids, err)
	}
	remove := append([]byte{18}, appendString(nil, ids[0].blob)...)
	lock := append([]byte{22}, appendString(nil, []byte("pass"))...)
	// A sign request with every flag bit set: forwarded as the client
	// sent it (the user's agent reads the flags it knows).
	sign := append([]byte{msgSignRequest}, appendString(nil, ids[0].blob)...)
	sign = binary.BigEndian.AppendUint32(appendString(sign, []byte("data")), 0xffffffff)
	var batch []byte
	for _, m := range [][]byte{msg(19), msg(11), append(frame(remove), remove...), append(frame(lock), lock...), msg(9), append(frame(sign), sign...), msg(11)} {
		batch = append(batch, m...)
	}
	want := []byte{msgFailure, msgIdentitiesAnswer, msgFailure, msgFailure, msgFailure, 0, msgIdentitiesAnswer}
	check := func(how string) {
		t.Helper()
		for i, w := range want {
			reply, err := readMessage(conn)
			if err != nil {
				t.Fatalf("%s: answer %d: %v", how, i, err)
			}
			if w != 0 && reply[0] != w {
				t.Errorf("%s: answer %d is type %d, want %d", how, i, reply[0], w)
			}
		}
		if got, err := List(up.Sock); err != nil || len(got) != 1 || got[0] != up.Fingerprint {
			t.Fatalf("%s: the user's agent now lists %v (%v): a request reached it", how, got, err)
		}
	}
	if _, err := conn.Write(batch); err != nil {
		t.Fatal(err)
	}
	check("in one write")
	for _, b := range batch {
		if _, err := conn.Write([]byte{b}); err != nil {
			t.Fatal(err)
		}
	}
	check("a byte at a time")
}
