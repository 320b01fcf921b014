package seal

import "encoding/binary"

// tinyELF returns a static x86_64 executable that makes each system call
// of nrs without arguments, writes "ok\n" and exits 0: a command whose
// every system call is known, for allowlists as short as SafeClaw's
// default, which no dynamically linked program gets through.
func tinyELF(nrs ...uint32) []byte {
	const base, hdr = 0x400000, 64 + 56
	var code []byte
	mov := func(op byte, v uint32) { code = binary.LittleEndian.AppendUint32(append(code, op), v) }
	for _, nr := range nrs {
		mov(0xb8, nr) // mov eax, nr
		code = append(code, 0x0f, 0x05)
	}
	mov(0xb8, 1)                          // mov eax, SYS_write
	mov(0xbf, 1)                          // mov edi, 1
	code = append(code, 0x48, 0x8d, 0x35) // lea rsi, [rip+16]: the message
	code = binary.LittleEndian.AppendUint32(code, 16)
	mov(0xba, 3)                                // mov edx, 3
	code = append(code, 0x0f, 0x05)             // syscall
	mov(0xb8, 231)                              // mov eax, SYS_exit_group
	code = append(code, 0x31, 0xff, 0x0f, 0x05) // xor edi, edi; syscall
	code = append(code, "ok\n"...)

	size := uint64(hdr + len(code))
	le := binary.LittleEndian
	b := []byte{0x7f, 'E', 'L', 'F', 2, 1, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0}
	b = le.AppendUint16(b, 2)    // ET_EXEC
	b = le.AppendUint16(b, 0x3e) // EM_X86_64
	b = le.AppendUint32(b, 1)
	b = le.AppendUint64(b, base+hdr) // entry
	b = le.AppendUint64(b, 64)       // phoff
	b = le.AppendUint64(b, 0)        // shoff
	b = le.AppendUint32(b, 0)
	b = le.AppendUint16(b, 64) // ehsize
	b = le.AppendUint16(b, 56) // phentsize
	b = le.AppendUint16(b, 1)  // phnum
	b = le.AppendUint16(b, 0)
	b = le.AppendUint16(b, 0)
	b = le.AppendUint16(b, 0)
	b = le.AppendUint32(b, 1) // PT_LOAD
	b = le.AppendUint32(b, 5) // R|X
	b = le.AppendUint64(b, 0)
	b = le.AppendUint64(b, base)
	b = le.AppendUint64(b, base)
	b = le.AppendUint64(b, size)
	b = le.AppendUint64(b, size)
	b = le.AppendUint64(b, 0x1000)
	return append(b, code...)
}
