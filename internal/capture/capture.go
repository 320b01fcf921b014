// Package capture builds the netlink messages that make the sandbox's
// network namespace hand every TCP connection to a non-loopback address to
// the capture listener, whatever the program does with proxy variables:
//
//   - a local route for every IPv4 (and IPv6) destination on lo, so that a
//     connect(2) to any address finds a route instead of failing with
//     ENETUNREACH, and UDP to anything without a listener inside is refused
//     (ECONNREFUSED: no packet leaves lo);
//   - an nftables table "stockade" (family inet) with one nat chain in the
//     output hook that redirects TCP whose destination is not loopback to
//     the capture port on 127.0.0.1 or ::1.
//
// Init sends them, as bytes prepared here, while it still holds
// CAP_NET_ADMIN in the sandbox's user namespace; the command never holds it,
// so it can neither change nor remove them. The supervisor reads the
// original destination of a captured connection with SO_ORIGINAL_DST
// (package egress).
//
// Nothing here talks to the kernel: Messages returns byte strings, one
// sendmsg(2) each, so that init, which may make only raw system calls, can
// send them, and so that tests can decode them.
package capture

import "encoding/binary"

// Table and Chain are the names of the nftables objects init makes.
const (
	Table = "stockade"
	Chain = "capture"
)

// Netlink protocol numbers of the two sockets init opens.
const (
	ProtoRoute     = 0  // NETLINK_ROUTE
	ProtoNetfilter = 12 // NETLINK_NETFILTER
)

// Messages are the two netlink requests init sends, each in one sendmsg:
// Route on a NETLINK_ROUTE socket, Rules on a NETLINK_NETFILTER socket (one
// nftables batch). No message asks for an acknowledgement: the kernel
// answers only a failure, before sendmsg returns, so one non-blocking read
// that finds nothing says both worked.
type Messages struct {
	Route []byte
	Rules []byte
}

// Build returns the messages for a capture listener on port, with the
// IPv6 route and rule when ipv6 (the kernel has IPv6).
func Build(port uint16, ipv6 bool) Messages {
	var m Messages
	m.Route = routeMsg(nil, afInet, 1)
	if ipv6 {
		m.Route = routeMsg(m.Route, afInet6, 2)
	}
	m.Rules = rules(port, ipv6)
	return m
}

// Constants of the kernel's netlink ABI (linux/netlink.h, rtnetlink.h,
// netfilter/nfnetlink.h, netfilter/nf_tables.h). They are written out here,
// not taken from x/sys/unix, so that the package builds and its tests run
// on any OS.
const (
	afInet  = 2
	afInet6 = 10

	nlmFRequest = 0x1
	nlmFExcl    = 0x200
	nlmFCreate  = 0x400
	nlmFAppend  = 0x800
	nlmsgError  = 2

	rtmNewRoute  = 24
	rtTableMain  = 254
	rtprotStatic = 4
	rtScopeHost  = 254
	rtnLocal     = 2
	rtaOIF       = 4
	loIndex      = 1 // lo is the first interface of every network namespace

	nfnlMsgBatchBegin = 0x10
	nfnlMsgBatchEnd   = 0x11
	nfnlSubsysNFT     = 10
	nfprotoInet       = 1
	nfprotoIPv4       = 2
	nfprotoIPv6       = 10

	nftMsgNewTable = 0
	nftMsgNewChain = 3
	nftMsgNewRule  = 6

	nftaTableName  = 1
	nftaTableFlags = 2
	nftaChainTable = 1
	nftaChainName  = 3
	nftaChainHook  = 4
	nftaChainPol   = 5
	nftaChainType  = 7
	nftaHookNum    = 1
	nftaHookPrio   = 2
	nftaRuleTable  = 1
	nftaRuleChain  = 2
	nftaRuleExprs  = 4
	nftaListElem   = 1
	nftaExprName   = 1
	nftaExprData   = 2
	nftaDataValue  = 1

	nfInetLocalOut = 3
	nfAccept       = 1
	natPrioDst     = -100 // NF_IP_PRI_NAT_DST: where "type nat hook output" goes

	nftReg1         = 1
	nftMetaNFProto  = 15
	nftMetaL4Proto  = 16
	nftPayloadNet   = 1
	nftCmpEq        = 0
	nftCmpNeq       = 1
	ipprotoTCP      = 6
	nlaFNested      = 0x8000
	nlmsgHeaderSize = 16
)

// routeMsg appends an RTM_NEWROUTE for "local 0.0.0.0/0 dev lo" (or ::/0)
// in the main table.
func routeMsg(b []byte, family byte, seq uint32) []byte {
	start := len(b)
	b = nlHeader(b, rtmNewRoute, nlmFRequest|nlmFCreate|nlmFExcl, seq)
	// struct rtmsg: family, dst_len, src_len, tos, table, protocol, scope, type; flags
	b = append(b, family, 0, 0, 0, rtTableMain, rtprotStatic, rtScopeHost, rtnLocal)
	b = binary.NativeEndian.AppendUint32(b, 0)
	b = attrU32(b, rtaOIF, loIndex, binary.NativeEndian)
	return finish(b, start)
}

// rules is the nftables batch: the table, its nat chain in the output hook,
// and a redirect rule per address family.
func rules(port uint16, ipv6 bool) []byte {
	var b []byte
	seq := uint32(1)
	next := func() uint32 { seq++; return seq }

	b = nfMsg(b, nfnlMsgBatchBegin, 0, 0, nfnlSubsysNFT, seq, nil)
	b = nfMsg(b, nftMsg(nftMsgNewTable), nlmFCreate, nfprotoInet, 0, next(), func(b []byte) []byte {
		b = attrStr(b, nftaTableName, Table)
		return attrU32(b, nftaTableFlags, 0, binary.BigEndian)
	})
	b = nfMsg(b, nftMsg(nftMsgNewChain), nlmFCreate, nfprotoInet, 0, next(), func(b []byte) []byte {
		b = attrStr(b, nftaChainTable, Table)
		b = attrStr(b, nftaChainName, Chain)
		b = nested(b, nftaChainHook, func(b []byte) []byte {
			b = attrU32(b, nftaHookNum, nfInetLocalOut, binary.BigEndian)
			prio := int32(natPrioDst)
			return attrU32(b, nftaHookPrio, uint32(prio), binary.BigEndian)
		})
		b = attrU32(b, nftaChainPol, nfAccept, binary.BigEndian)
		return attrStr(b, nftaChainType, "nat")
	})
	// ip daddr != 127.0.0.0/8 meta l4proto tcp redirect to :port
	b = ruleMsg(b, next(), []expr{
		meta(nftMetaNFProto), cmp(nftCmpEq, []byte{nfprotoIPv4}),
		meta(nftMetaL4Proto), cmp(nftCmpEq, []byte{ipprotoTCP}),
		payload(16, 4), // IPv4 destination
		bitwise(4, []byte{0xff, 0, 0, 0}),
		cmp(nftCmpNeq, []byte{127, 0, 0, 0}),
		immediate(binary.BigEndian.AppendUint16(nil, port)),
		redirect(),
	})
	if ipv6 {
		// ip6 daddr != ::1 meta l4proto tcp redirect to :port
		loop6 := make([]byte, 16)
		loop6[15] = 1
		b = ruleMsg(b, next(), []expr{
			meta(nftMetaNFProto), cmp(nftCmpEq, []byte{nfprotoIPv6}),
			meta(nftMetaL4Proto), cmp(nftCmpEq, []byte{ipprotoTCP}),
			payload(24, 16), // IPv6 destination
			cmp(nftCmpNeq, loop6),
			immediate(binary.BigEndian.AppendUint16(nil, port)),
			redirect(),
		})
	}
	return nfMsg(b, nfnlMsgBatchEnd, 0, 0, nfnlSubsysNFT, next(), nil)
}

func nftMsg(t uint16) uint16 { return nfnlSubsysNFT<<8 | t }

func ruleMsg(b []byte, seq uint32, exprs []expr) []byte {
	return nfMsg(b, nftMsg(nftMsgNewRule), nlmFCreate|nlmFAppend, nfprotoInet, 0, seq, func(b []byte) []byte {
		b = attrStr(b, nftaRuleTable, Table)
		b = attrStr(b, nftaRuleChain, Chain)
		return nested(b, nftaRuleExprs, func(b []byte) []byte {
			for _, e := range exprs {
				b = nested(b, nftaListElem, func(b []byte) []byte {
					b = attrStr(b, nftaExprName, e.name)
					return nested(b, nftaExprData, e.data)
				})
			}
			return b
		})
	})
}

// expr is one nftables expression: its name and its attributes.
type expr struct {
	name string
	data func([]byte) []byte
}

func meta(key uint32) expr {
	return expr{"meta", func(b []byte) []byte {
		b = attrU32(b, 1, nftReg1, binary.BigEndian) // NFTA_META_DREG
		return attrU32(b, 2, key, binary.BigEndian)  // NFTA_META_KEY
	}}
}

func cmp(op uint32, v []byte) expr {
	return expr{"cmp", func(b []byte) []byte {
		b = attrU32(b, 1, nftReg1, binary.BigEndian) // NFTA_CMP_SREG
		b = attrU32(b, 2, op, binary.BigEndian)      // NFTA_CMP_OP
		return dataAttr(b, 3, v)                     // NFTA_CMP_DATA
	}}
}

func payload(offset, n uint32) expr {
	return expr{"payload", func(b []byte) []byte {
		b = attrU32(b, 1, nftReg1, binary.BigEndian)       // NFTA_PAYLOAD_DREG
		b = attrU32(b, 2, nftPayloadNet, binary.BigEndian) // NFTA_PAYLOAD_BASE
		b = attrU32(b, 3, offset, binary.BigEndian)        // NFTA_PAYLOAD_OFFSET
		return attrU32(b, 4, n, binary.BigEndian)          // NFTA_PAYLOAD_LEN
	}}
}

func bitwise(n uint32, mask []byte) expr {
	return expr{"bitwise", func(b []byte) []byte {
		b = attrU32(b, 1, nftReg1, binary.BigEndian)   // NFTA_BITWISE_SREG
		b = attrU32(b, 2, nftReg1, binary.BigEndian)   // NFTA_BITWISE_DREG
		b = attrU32(b, 3, n, binary.BigEndian)         // NFTA_BITWISE_LEN
		b = dataAttr(b, 4, mask)                       // NFTA_BITWISE_MASK
		return dataAttr(b, 5, make([]byte, len(mask))) // NFTA_BITWISE_XOR
	}}
}

func immediate(v []byte) expr {
	return expr{"immediate", func(b []byte) []byte {
		b = attrU32(b, 1, nftReg1, binary.BigEndian) // NFTA_IMMEDIATE_DREG
		return dataAttr(b, 2, v)                     // NFTA_IMMEDIATE_DATA
	}}
}

func redirect() expr {
	return expr{"redir", func(b []byte) []byte {
		return attrU32(b, 1, nftReg1, binary.BigEndian) // NFTA_REDIR_REG_PROTO_MIN
	}}
}

// nlHeader appends a struct nlmsghdr whose length finish fills in.
func nlHeader(b []byte, typ, flags uint16, seq uint32) []byte {
	b = binary.NativeEndian.AppendUint32(b, 0)
	b = binary.NativeEndian.AppendUint16(b, typ)
	b = binary.NativeEndian.AppendUint16(b, flags)
	b = binary.NativeEndian.AppendUint32(b, seq)
	return binary.NativeEndian.AppendUint32(b, 0) // port id: the kernel's
}

// nfMsg appends a netfilter message: the header, struct nfgenmsg, attrs.
func nfMsg(b []byte, typ, flags uint16, family byte, resID uint16, seq uint32, attrs func([]byte) []byte) []byte {
	start := len(b)
	b = nlHeader(b, typ, nlmFRequest|flags, seq)
	b = append(b, family, 0) // nfgen_family, version NFNETLINK_V0
	b = binary.BigEndian.AppendUint16(b, resID)
	if attrs != nil {
		b = attrs(b)
	}
	return finish(b, start)
}

// finish writes the length of the message that starts at start.
func finish(b []byte, start int) []byte {
	binary.NativeEndian.PutUint32(b[start:], uint32(len(b)-start))
	return b
}

func attr(b []byte, typ uint16, v []byte) []byte {
	b = binary.NativeEndian.AppendUint16(b, uint16(4+len(v)))
	b = binary.NativeEndian.AppendUint16(b, typ)
	b = append(b, v...)
	return pad(b)
}

func pad(b []byte) []byte {
	for len(b)%4 != 0 {
		b = append(b, 0)
	}
	return b
}

func attrStr(b []byte, typ uint16, s string) []byte { return attr(b, typ, append([]byte(s), 0)) }

func attrU32(b []byte, typ uint16, v uint32, order binary.AppendByteOrder) []byte {
	return attr(b, typ, order.AppendUint32(nil, v))
}

func nested(b []byte, typ uint16, fill func([]byte) []byte) []byte {
	start := len(b)
	b = binary.NativeEndian.AppendUint16(b, 0)
	b = binary.NativeEndian.AppendUint16(b, typ|nlaFNested)
	b = fill(b)
	binary.NativeEndian.PutUint16(b[start:], uint16(len(b)-start))
	return b
}

func dataAttr(b []byte, typ uint16, v []byte) []byte {
	return nested(b, typ, func(b []byte) []byte { return attr(b, nftaDataValue, v) })
}

// Failure returns the error a netlink reply reports, or 0: reply is what a
// read on the socket returned after the send (an NLMSG_ERROR message).
func Failure(reply []byte) int32 {
	if len(reply) < nlmsgHeaderSize+4 || binary.NativeEndian.Uint16(reply[4:]) != nlmsgError {
		return 0
	}
	return -int32(binary.NativeEndian.Uint32(reply[nlmsgHeaderSize:]))
}
