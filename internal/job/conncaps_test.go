package job

import (
	"testing"

	"github.com/stockade-dev/stockade/internal/authproxy"
	"github.com/stockade-dev/stockade/internal/egress"
)

// TestConnCaps: both proxies at their caps leave the reserve free, and a
// large limit gives each its default.
func TestConnCaps(t *testing.T) {
	for _, tt := range []struct {
		limit       uint64
		proxy, auth int
	}{
		{1 << 20, egress.DefaultMaxConns, authproxy.DefaultMaxConns},
		{20000, 1024, 1024},
		{4096, 768, 768},
		{1024, 192, 192},
		{256, 32, 32},
		{128, 1, 1},
		{0, 1, 1},
	} {
		proxy, auth := ConnCaps(tt.limit)
		if proxy != tt.proxy || auth != tt.auth {
			t.Errorf("ConnCaps(%d) = %d, %d; want %d, %d", tt.limit, proxy, auth, tt.proxy, tt.auth)
		}
		if used := uint64(fdsPerConn * (proxy + auth)); tt.limit >= 256 && tt.limit-used < min(max(tt.limit/4, minReserve), maxReserve) {
			t.Errorf("ConnCaps(%d): the caps use %d descriptors, leaving less than the reserve", tt.limit, used)
		}
	}
}
