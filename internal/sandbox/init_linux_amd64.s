#include "textflag.h"

// func cloneInit(flags, stack uintptr, p *program, tls uintptr) (pid, errno uintptr)
//
// clone(flags, stack): the child starts on stack, which is its own, sets
// its thread pointer to tls unless tls is 0 (when the Go runtime's thread
// block is not in its memory; the ABI wrapper of initEntry reads g from
// there) and calls initEntry(p), which never returns; the parent returns
// the result.
TEXT ·cloneInit(SB),NOSPLIT|NOFRAME,$0-48
	MOVQ	flags+0(FP), DI
	MOVQ	stack+8(FP), SI
	MOVQ	p+16(FP), R12 // kept across the syscall, in both processes
	MOVQ	tls+24(FP), R13
	MOVQ	$0, DX
	MOVQ	$0, R10
	MOVQ	$0, R8
	MOVQ	$0, R9
	MOVQ	$56, AX // SYS_CLONE
	SYSCALL
	CMPQ	AX, $0
	JEQ	child
	CMPQ	AX, $0xfffffffffffff001
	JLS	ok
	MOVQ	$0, pid+32(FP)
	NEGQ	AX
	MOVQ	AX, errno+40(FP)
	RET
ok:
	MOVQ	AX, pid+32(FP)
	MOVQ	$0, errno+40(FP)
	RET
child:
	// On the new stack; nothing above it is ours.
	TESTQ	R13, R13
	JEQ	call
	MOVQ	$0x1002, DI // ARCH_SET_FS
	MOVQ	R13, SI
	MOVQ	$158, AX // SYS_ARCH_PRCTL
	SYSCALL
call:
	SUBQ	$16, SP
	MOVQ	R12, 0(SP)
	CALL	·initEntry(SB)
	MOVL	$125, DI
	MOVL	$231, AX // SYS_EXIT_GROUP
	SYSCALL
	INT	$3
