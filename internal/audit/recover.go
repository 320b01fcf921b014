package audit

import (
	"bytes"
	"fmt"
	"io"
	"os"
)

// partialTail returns the length of a last line without a newline at the
// end of f (size bytes): what a writer leaves when it dies, or runs out of
// space, in the middle of a write. Only the tail after the last newline is
// looked at, and only up to a line's maximum length: a longer tail is not a
// cut-off line of this package, and Verify reports it.
func partialTail(f *os.File, size int64) (int64, error) {
	if size == 0 {
		return 0, nil
	}
	n := min(size, int64(MaxLineSize)+1)
	buf := make([]byte, n)
	if _, err := f.ReadAt(buf, size-n); err != nil && err != io.EOF {
		return 0, fmt.Errorf("reading the end of the audit log: %w", err)
	}
	if buf[n-1] == '\n' {
		return 0, nil
	}
	i := bytes.LastIndexByte(buf, '\n')
	if i < 0 && size > int64(MaxLineSize) {
		return 0, nil
	}
	return n - int64(i) - 1, nil
}

// gapEvent records in place of a line that was cut off: it takes the seq
// the lost line would have had, so the chain goes on over the gap.
func gapEvent(bytes int64, why string) pendingEvent {
	return pendingEvent{EventGap, map[string]any{"bytes": bytes, "reason": why}}
}
