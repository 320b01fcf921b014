#include "textflag.h"

// func vfork() (pid, errno uintptr)
//
// clone(CLONE_VM|CLONE_VFORK|SIGCHLD): the child runs on the caller's stack
// while the caller is suspended until the child execs or exits. The return
// address is in the link register, which each thread has its own of.
TEXT ·vfork(SB),NOSPLIT,$0-16
	MOVD	$0x4111, R0 // CLONE_VM|CLONE_VFORK|SIGCHLD
	MOVD	$0, R1
	MOVD	$0, R2
	MOVD	$0, R3
	MOVD	$0, R4
	MOVD	$0, R5
	MOVD	$220, R8 // SYS_CLONE
	SVC
	CMN	$4095, R0
	BCC	ok
	MOVD	ZR, pid+0(FP)
	NEG	R0, R0
	MOVD	R0, errno+8(FP)
	RET
ok:
	MOVD	R0, pid+0(FP)
	MOVD	ZR, errno+8(FP)
	RET
