#include "textflag.h"

// func vfork() (pid, errno uintptr)
//
// clone(CLONE_VM|CLONE_VFORK|SIGCHLD): the child runs on the caller's stack
// while the caller is suspended until the child execs or exits. The return
// address is kept in a register across the call, as the child's own calls
// overwrite the stack slot it was in.
TEXT ·vfork(SB),NOSPLIT|NOFRAME,$0-16
	MOVQ	$0x4111, DI // CLONE_VM|CLONE_VFORK|SIGCHLD
	MOVQ	$0, SI
	MOVQ	$0, DX
	MOVQ	$0, R10
	MOVQ	$0, R8
	MOVQ	$0, R9
	MOVQ	$56, AX // SYS_CLONE
	POPQ	R12
	SYSCALL
	PUSHQ	R12
	CMPQ	AX, $0xfffffffffffff001
	JLS	ok
	MOVQ	$0, pid+0(FP)
	NEGQ	AX
	MOVQ	AX, errno+8(FP)
	RET
ok:
	MOVQ	AX, pid+0(FP)
	MOVQ	$0, errno+8(FP)
	RET
