//go:build linux

package main

import (
	"encoding/binary"
	"net/netip"

	"golang.org/x/sys/unix"
)

// The capture rules (package capture) are the sandbox's own: a command
// without CAP_NET_ADMIN can neither remove them nor route around them.
// These attempts speak netlink as nft(8) and ip(8) would.
func init() {
	register("nft-flush", 0, func([]string) error {
		// nft flush ruleset: NFT_MSG_DELTABLE with no name, any family.
		return nlSend(unix.NETLINK_NETFILTER, nftBatch(unix.NFT_MSG_DELTABLE, unix.NFPROTO_UNSPEC, nil))
	})
	register("nft-delete-table", 1, func(a []string) error {
		return nlSend(unix.NETLINK_NETFILTER, nftBatch(unix.NFT_MSG_DELTABLE, unix.NFPROTO_INET,
			nlAttr(unix.NFTA_TABLE_NAME, append([]byte(a[0]), 0))))
	})
	register("route-add", 1, func(a []string) error {
		// A route of its own for a prefix, through lo, in the main table.
		p, err := netip.ParsePrefix(a[0])
		if err != nil {
			return err
		}
		fam := byte(unix.AF_INET)
		if p.Addr().Is6() {
			fam = unix.AF_INET6
		}
		b := []byte{fam, byte(p.Bits()), 0, 0, unix.RT_TABLE_MAIN, unix.RTPROT_STATIC, unix.RT_SCOPE_UNIVERSE, unix.RTN_UNICAST, 0, 0, 0, 0}
		b = append(b, nlAttr(unix.RTA_DST, p.Addr().AsSlice())...)
		b = append(b, nlAttr(unix.RTA_OIF, binary.NativeEndian.AppendUint32(nil, 1))...)
		return nlSend(unix.NETLINK_ROUTE, nlMsg(unix.RTM_NEWROUTE, unix.NLM_F_REQUEST|unix.NLM_F_CREATE|unix.NLM_F_ACK, b))
	})
}

func nlMsg(typ, flags uint16, body []byte) []byte {
	b := binary.NativeEndian.AppendUint32(nil, uint32(16+len(body)))
	b = binary.NativeEndian.AppendUint16(b, typ)
	b = binary.NativeEndian.AppendUint16(b, flags)
	b = binary.NativeEndian.AppendUint32(b, 1)
	b = binary.NativeEndian.AppendUint32(b, 0)
	return append(b, body...)
}

func nlAttr(typ uint16, v []byte) []byte {
	b := binary.NativeEndian.AppendUint16(nil, uint16(4+len(v)))
	b = binary.NativeEndian.AppendUint16(b, typ)
	b = append(b, v...)
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

// nftBatch wraps one nf_tables message, acknowledged, in a batch.
func nftBatch(msg uint16, family byte, attrs []byte) []byte {
	gen := func(fam byte, res uint16) []byte { return binary.BigEndian.AppendUint16([]byte{fam, 0}, res) }
	b := nlMsg(unix.NFNL_MSG_BATCH_BEGIN, unix.NLM_F_REQUEST, gen(0, unix.NFNL_SUBSYS_NFTABLES))
	b = append(b, nlMsg(unix.NFNL_SUBSYS_NFTABLES<<8|msg, unix.NLM_F_REQUEST|unix.NLM_F_ACK, append(gen(family, 0), attrs...))...)
	return append(b, nlMsg(unix.NFNL_MSG_BATCH_END, unix.NLM_F_REQUEST, gen(0, unix.NFNL_SUBSYS_NFTABLES))...)
}

// nlSend sends msg and returns the error of the kernel's first answer; an
// acknowledgement (error 0) is the attempt succeeding.
func nlSend(proto int, msg []byte) error {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, proto)
	if err != nil {
		return err
	}
	defer unix.Close(fd)
	if err := unix.Sendto(fd, msg, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		return err
	}
	buf := make([]byte, 4096)
	n, _, err := unix.Recvfrom(fd, buf, 0)
	if err != nil {
		return err
	}
	if n >= 20 && binary.NativeEndian.Uint16(buf[4:]) == unix.NLMSG_ERROR {
		if e := -int32(binary.NativeEndian.Uint32(buf[16:])); e != 0 {
			return unix.Errno(e)
		}
	}
	return nil
}
