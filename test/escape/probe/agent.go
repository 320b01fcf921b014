//go:build linux

package main

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"time"
)

func init() {
	// agent-request HEX writes HEX (length prefixes included, so a row can
	// send what no client would) to $SSH_AUTH_SOCK and prints the answer:
	// DENIED AGENT-FAILURE for SSH_AGENT_FAILURE, DENIED AGENT-CLOSED when
	// the agent hangs up, OK type N for anything else.
	register("agent-request", 1, func(a []string) error {
		raw, err := hex.DecodeString(a[0])
		if err != nil {
			return fmt.Errorf("agent-request: %w", err)
		}
		c, err := net.DialTimeout("unix", os.Getenv("SSH_AUTH_SOCK"), 3*time.Second)
		if err != nil {
			return err
		}
		defer c.Close()
		c.SetDeadline(time.Now().Add(5 * time.Second))
		if _, err := c.Write(raw); err != nil {
			return err
		}
		var hdr [5]byte
		if _, err := io.ReadFull(c, hdr[:]); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return denial("AGENT-CLOSED")
			}
			return err
		}
		if binary.BigEndian.Uint32(hdr[:4]) == 1 && hdr[4] == 5 {
			return denial("AGENT-FAILURE")
		}
		return found(fmt.Sprintf("type %d", hdr[4]))
	})
}
