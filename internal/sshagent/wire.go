package sshagent

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
)

// MaxMessage is the longest message either side may send, the limit
// OpenSSH's own agent keeps (AGENT_MAX_LEN).
const MaxMessage = 256 << 10

// maxKeys bounds the identities one answer may list.
const maxKeys = 1024

// Message numbers (draft-miller-ssh-agent, section 6.1).
const (
	msgFailure            = 5
	msgSuccess            = 6
	msgRequestIdentities  = 11
	msgIdentitiesAnswer   = 12
	msgSignRequest        = 13
	msgSignResponse       = 14
	msgExtension          = 27
	msgExtensionFailure   = 28
	sessionBindExtension  = "session-bind@openssh.com"
	userAuthRequest       = 50 // SSH_MSG_USERAUTH_REQUEST, in the data of a login signature
	sshsigMagic           = "SSHSIG"
	hostboundPublicKeyAlg = "publickey-hostbound-v00@openssh.com"
)

// requestNames name the requests the filter refuses, for the audit log.
var requestNames = map[byte]string{
	1:  "SSH1 request identities",
	3:  "SSH1 RSA challenge",
	7:  "SSH1 add identity",
	8:  "SSH1 remove identity",
	9:  "SSH1 remove all identities",
	17: "add identity",
	18: "remove identity",
	19: "remove all identities",
	20: "add smartcard key",
	21: "remove smartcard key",
	22: "lock",
	23: "unlock",
	24: "SSH1 add constrained identity",
	25: "add constrained identity",
	26: "add constrained smartcard key",
	27: "extension",
}

// requestName is the name of message type t for the audit log.
func requestName(t byte) string {
	if n, ok := requestNames[t]; ok {
		return n
	}
	return fmt.Sprintf("message type %d", t)
}

var (
	errTooLong   = errors.New("message longer than the agent protocol allows")
	errEmpty     = errors.New("empty message")
	errMalformed = errors.New("malformed message")
)

// readMessage reads one length-prefixed message: its type byte first.
func readMessage(r io.Reader) ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	switch {
	case n == 0:
		return nil, errEmpty
	case n > MaxMessage:
		return nil, errTooLong
	}
	msg := make([]byte, n)
	if _, err := io.ReadFull(r, msg); err != nil {
		return nil, err
	}
	return msg, nil
}

// writeMessage writes msg with its length prefix, in one write.
func writeMessage(w io.Writer, msg []byte) error {
	b := make([]byte, 4+len(msg))
	binary.BigEndian.PutUint32(b, uint32(len(msg)))
	copy(b[4:], msg)
	_, err := w.Write(b)
	return err
}

// reader takes SSH wire fields (RFC 4251, section 5) off a message; the
// first error sticks, and every later read returns zero values.
type reader struct {
	b   []byte
	err error
}

func (r *reader) uint32() uint32 {
	if r.err != nil || len(r.b) < 4 {
		r.err = errMalformed
		return 0
	}
	v := binary.BigEndian.Uint32(r.b)
	r.b = r.b[4:]
	return v
}

func (r *reader) byte() byte {
	if r.err != nil || len(r.b) < 1 {
		r.err = errMalformed
		return 0
	}
	v := r.b[0]
	r.b = r.b[1:]
	return v
}

// string reads a length-prefixed string; it aliases the message.
func (r *reader) string() []byte {
	n := r.uint32()
	if r.err != nil || uint64(n) > uint64(len(r.b)) {
		r.err = errMalformed
		return nil
	}
	v := r.b[:n:n]
	r.b = r.b[n:]
	return v
}

// done reports an error unless the whole message was read.
func (r *reader) done() error {
	if r.err == nil && len(r.b) != 0 {
		r.err = errMalformed
	}
	return r.err
}

func appendString(b, s []byte) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(s)))
	return append(b, s...)
}

// Fingerprint is the SHA256 fingerprint of a public key blob as ssh-add -l
// and ssh-keygen -l print it: "SHA256:" and unpadded base64.
func Fingerprint(blob []byte) string {
	sum := sha256.Sum256(blob)
	return "SHA256:" + base64.RawStdEncoding.EncodeToString(sum[:])
}

// ValidFingerprint reports whether s has the form Fingerprint returns.
func ValidFingerprint(s string) bool {
	b64, ok := strings.CutPrefix(s, "SHA256:")
	if !ok || len(b64) != 43 {
		return false
	}
	b, err := base64.RawStdEncoding.DecodeString(b64)
	return err == nil && len(b) == sha256.Size
}

// keyType is the algorithm name a public key blob starts with.
func keyType(blob []byte) string {
	r := reader{b: blob}
	return printable(r.string())
}

// identity is one key of an IDENTITIES_ANSWER.
type identity struct {
	blob, comment []byte
}

// parseIdentities reads an IDENTITIES_ANSWER, type byte included.
func parseIdentities(msg []byte) ([]identity, error) {
	r := reader{b: msg}
	if r.byte() != msgIdentitiesAnswer {
		return nil, errMalformed
	}
	n := r.uint32()
	if r.err == nil && n > maxKeys {
		return nil, fmt.Errorf("%d identities, more than %d", n, maxKeys)
	}
	var ids []identity
	for i := uint32(0); i < n && r.err == nil; i++ {
		ids = append(ids, identity{r.string(), r.string()})
	}
	if err := r.done(); err != nil {
		return nil, err
	}
	return ids, nil
}

// identitiesAnswer encodes an IDENTITIES_ANSWER.
func identitiesAnswer(ids []identity) []byte {
	b := []byte{msgIdentitiesAnswer}
	b = binary.BigEndian.AppendUint32(b, uint32(len(ids)))
	for _, id := range ids {
		b = appendString(appendString(b, id.blob), id.comment)
	}
	return b
}

// signRequest is a SIGN_REQUEST's fields.
type signRequest struct {
	key, data []byte
	flags     uint32
}

func parseSignRequest(msg []byte) (signRequest, error) {
	r := reader{b: msg[1:]}
	req := signRequest{key: r.string(), data: r.string(), flags: r.uint32()}
	return req, r.done()
}

// signedData is what the audit log says of the data a client asks to sign.
// The client chooses those bytes: they say what it claims, not what a
// server will accept.
func signedData(data []byte) map[string]any {
	if len(data) >= len(sshsigMagic) && string(data[:len(sshsigMagic)]) == sshsigMagic {
		// ssh-keygen -Y sign, git's SSH commit signing: magic, namespace,
		// reserved, hash algorithm, hash of the message.
		r := reader{b: data[len(sshsigMagic):]}
		ns := r.string()
		if r.err == nil {
			return map[string]any{"kind": "sshsig", "namespace": printable(ns)}
		}
		return map[string]any{"kind": "other"}
	}
	// An SSH login (RFC 4252, section 7): session id, USERAUTH_REQUEST,
	// user, service, "publickey", TRUE, algorithm, key, and with the
	// host-bound method the server's host key.
	r := reader{b: data}
	r.string()
	if r.byte() != userAuthRequest {
		return map[string]any{"kind": "other"}
	}
	user, service, method := r.string(), r.string(), r.string()
	r.byte()
	r.string()
	r.string()
	if r.err != nil {
		return map[string]any{"kind": "other"}
	}
	f := map[string]any{"kind": "ssh-userauth", "user": printable(user), "service": printable(service)}
	if string(method) == hostboundPublicKeyAlg {
		if hk := r.string(); r.err == nil {
			f["host_key"] = Fingerprint(hk)
		}
	}
	return f
}

// parseSessionBind reads a session-bind@openssh.com extension's contents
// (after its name): the server's host key, the session id, the server's
// signature over it, and whether the connection is a forwarding.
func parseSessionBind(r *reader) (hostKey []byte, forwarding bool, err error) {
	hostKey = r.string()
	r.string()
	r.string()
	forwarding = r.byte() != 0
	return hostKey, forwarding, r.done()
}

// printable cuts s to 128 bytes of printable ASCII, '?' for the rest, so
// that what a client sends cannot forge a line of the rendered log.
func printable(s []byte) string {
	if len(s) > 128 {
		s = s[:128]
	}
	out := make([]byte, len(s))
	for i, c := range s {
		if c < 0x20 || c > 0x7e {
			c = '?'
		}
		out[i] = c
	}
	return string(out)
}
