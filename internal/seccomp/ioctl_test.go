package seccomp

import "testing"

// TestNumbers checks that numbers covers exactly the range it is given, for
// every direction and size, with the fewest aligned blocks.
func TestNumbers(t *testing.T) {
	tests := []struct {
		first, last int
		blocks      int
	}{
		{0, 0xff, 1}, {7, 16, 3}, {18, 27, 3}, {40, 47, 1}, {0x84, 0x87, 1}, {5, 5, 1}, {1, 0xfe, 14}, {0xff, 0xff, 1},
	}
	for _, tt := range tests {
		rules := numbers('f', tt.first, tt.last, "test")
		if len(rules) != tt.blocks {
			t.Errorf("numbers(%d, %d): %d rules, want %d", tt.first, tt.last, len(rules), tt.blocks)
		}
		for typ := range 0x100 {
			for nr := range 0x100 {
				for _, high := range []uint32{0, 0x40080000, 0xc0ff0000, 0x80000000} { // direction and size
					cmd := high | uint32(typ)<<8 | uint32(nr)
					matched := false
					for _, r := range rules {
						matched = matched || cmd&r.mask == r.value
					}
					if want := typ == 'f' && tt.first <= nr && nr <= tt.last; matched != want {
						t.Fatalf("numbers(%d, %d) matches %#x: %v, want %v", tt.first, tt.last, cmd, matched, want)
					}
				}
			}
		}
	}
}

// ioc encodes a command as include/uapi/asm-generic/ioctl.h does.
func ioc(dir, typ, nr, size uint32) uint32 { return dir<<30 | size<<16 | typ<<8 | nr }

const (
	iocNone  = 0
	iocWrite = 1
	iocRead  = 2
)

// TestIoctlConstants checks the command words the profile spells out against
// their definitions in the kernel's headers (x/sys/unix lacks most of them).
func TestIoctlConstants(t *testing.T) {
	tests := []struct {
		name      string
		got, want uint32
	}{
		{"FICLONE = _IOW(0x94, 9, int)", fiClone, ioc(iocWrite, 0x94, 9, 4)},
		{"FICLONERANGE = _IOW(0x94, 13, struct file_clone_range)", fiCloneRange, ioc(iocWrite, 0x94, 13, 32)},
		{"FS_IOC_FSGETXATTR = _IOR('X', 31, struct fsxattr)", fsIocFSGetXattr, ioc(iocRead, 'X', 31, 28)},
		{"FS_IOC_FSSETXATTR = _IOW('X', 32, struct fsxattr)", fsIocFSSetXattr, ioc(iocWrite, 'X', 32, 28)},
		{"EXT4_IOC_SWAP_BOOT = _IO('f', 17)", ext4SwapBoot, ioc(iocNone, 'f', 17, 0)},
		{"IOC_WATCH_QUEUE_SET_SIZE = _IO('W', 0x60)", watchQueueSetSize, ioc(iocNone, 'W', 0x60, 0)},
		{"IOC_WATCH_QUEUE_SET_FILTER = _IO('W', 0x61)", watchQueueSetFilter, ioc(iocNone, 'W', 0x61, 0)},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: profile has %#x, the header says %#x", tt.name, tt.got, tt.want)
		}
	}
}
