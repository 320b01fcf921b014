package session

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// The control protocol (docs/control-api.md). A client connects to the
// session's unix socket and sends one request: a JSON object on one line.
// The supervisor answers with one JSON line. After a successful "attach" the
// connection carries frames both ways:
//
//	frame = type (1 byte) | length (4 bytes, big endian) | payload
//
//	client → supervisor   'i' input bytes for the terminal
//	                      'w' window size: rows, cols (2 bytes each, big endian)
//	                      'd' detach (no payload)
//	supervisor → client   'o' output bytes of the terminal
//	                      'x' the session ended: JSON {"code": N, "reason": "..."}
const Version = 1

// Ops of the control protocol.
const (
	OpAttach  = "attach"
	OpStop    = "stop"
	OpStatus  = "status"
	OpNetwork = "network"
)

// Frame types.
const (
	FrameInput  = 'i'
	FrameResize = 'w'
	FrameDetach = 'd'
	FrameOutput = 'o'
	FrameExit   = 'x'
)

// Request is the first line a client sends.
type Request struct {
	V    int    `json:"v"`
	Op   string `json:"op"`
	Rows uint16 `json:"rows,omitempty"` // attach: the client's window
	Cols uint16 `json:"cols,omitempty"`
	// network: allow, block, reset (Target) or list, of the agent's
	// rules, or of the containers' with Scope ScopePod.
	Action string `json:"action,omitempty"`
	Target string `json:"target,omitempty"`
	Scope  string `json:"scope,omitempty"`
}

// Scopes of the network op: whose rules it changes.
const (
	ScopeAgent = ""    // the command's own traffic
	ScopePod   = "pod" // the containers of its engine (--containers)
)

// Response is the supervisor's answer line.
type Response struct {
	V       int         `json:"v"`
	OK      bool        `json:"ok"`
	Error   string      `json:"error,omitempty"`
	Session *Session    `json:"session,omitempty"`
	Rules   []RuleEntry `json:"rules,omitempty"` // network
	// Network is the mode and the implicit routes (network).
	Network *NetworkView `json:"network,omitempty"`
}

// Exit is the payload of FrameExit.
type Exit struct {
	Code   int    `json:"code"`
	Reason string `json:"reason"`
	// Report is what the checks after the session's runs found, a line
	// each, as a foreground run prints it (REVIEW, QUARANTINED, TAMPER,
	// the git check): the attached client shows it once it has the
	// user's terminal back. At most maxReport lines.
	Report []string `json:"report,omitempty"`
}

// maxReport and maxReportBytes bound Exit.Report (its lines are escaped
// at most sixfold in JSON, well within maxFrame); the audit log has every
// line.
const (
	maxReport      = 200
	maxReportBytes = 64 << 10
)

const (
	maxRequest = 4 << 10
	maxFrame   = 1 << 20
)

// readRequest reads and checks one request line.
func readRequest(r *bufio.Reader) (Request, error) {
	line, err := r.ReadSlice('\n')
	if err == bufio.ErrBufferFull || len(line) > maxRequest {
		return Request{}, fmt.Errorf("request longer than %d bytes", maxRequest)
	}
	if err != nil {
		return Request{}, fmt.Errorf("reading request: %w", err)
	}
	var req Request
	if err := json.Unmarshal(line, &req); err != nil {
		return Request{}, fmt.Errorf("request is not a JSON object: %w", err)
	}
	if req.V != Version {
		return Request{}, fmt.Errorf("protocol version %d is not supported (this supervisor speaks %d); use the same stockade binary", req.V, Version)
	}
	switch req.Op {
	case OpAttach, OpStop, OpStatus, OpNetwork:
	default:
		return Request{}, fmt.Errorf("unknown op %q (known: attach, stop, status, network)", req.Op)
	}
	return req, nil
}

func writeJSONLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

func writeFrame(w io.Writer, typ byte, payload []byte) error {
	var hdr [5]byte
	hdr[0] = typ
	binary.BigEndian.PutUint32(hdr[1:], uint32(len(payload)))
	if _, err := w.Write(hdr[:]); err != nil {
		return err
	}
	_, err := w.Write(payload)
	return err
}

var errFrame = errors.New("malformed frame")

func readFrame(r io.Reader) (byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n > maxFrame {
		return 0, nil, fmt.Errorf("%w: %d bytes is over the %d limit", errFrame, n, maxFrame)
	}
	payload := make([]byte, n)
	if _, err := io.ReadFull(r, payload); err != nil {
		return 0, nil, err
	}
	return hdr[0], payload, nil
}

func sizePayload(rows, cols uint16) []byte {
	var b [4]byte
	binary.BigEndian.PutUint16(b[:2], rows)
	binary.BigEndian.PutUint16(b[2:], cols)
	return b[:]
}

func parseSize(p []byte) (rows, cols uint16, err error) {
	if len(p) != 4 {
		return 0, 0, fmt.Errorf("%w: window size of %d bytes", errFrame, len(p))
	}
	return binary.BigEndian.Uint16(p[:2]), binary.BigEndian.Uint16(p[2:]), nil
}
