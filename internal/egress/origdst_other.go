//go:build !linux

package egress

import (
	"errors"
	"net"
	"net/netip"
)

func originalDst(net.Conn) (netip.AddrPort, error) {
	return netip.AddrPort{}, errors.New("original destination: transparent capture needs Linux")
}
