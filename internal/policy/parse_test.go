package policy

import (
	"strings"
	"testing"
)

func TestParseSize(t *testing.T) {
	tests := []struct {
		in      string
		want    int64
		wantErr bool
	}{
		{"1048576", 0, true}, // a unit is required
		{"4", 0, true},
		{"4b", 0, true},
		{"1024k", 1 << 20, false},
		{"512m", 512 << 20, false},
		{"512M", 512 << 20, false},
		{"2g", 2 << 30, false},
		{"2GiB", 2 << 30, false},
		{"2gb", 2 << 30, false},
		{"1.5g", 3 << 29, false},
		{"1t", 1 << 40, false},
		{"4k", 4096, false},
		{"0", 0, false},
		{"lots", 0, true},
		{"", 0, true},
		{"-1", 0, true},
		{"1.5", 0, true},
		{"NaNg", 0, true},
		{"1e9", 0, true},
		{"2x", 0, true},
		{"99999999999t", 0, true},
		{"1..5g", 0, true},
	}
	for _, tt := range tests {
		got, err := ParseSize(tt.in)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("ParseSize(%q) = %d, %v; want %d, error %v", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestFormatSize(t *testing.T) {
	tests := map[int64]string{
		512:       "512 B",
		1024:      "1.0 KiB",
		3 << 19:   "1.5 MiB",
		2 << 30:   "2.0 GiB",
		5 << 40:   "5.0 TiB",
		1<<63 - 1: "8.0 EiB",
	}
	for in, want := range tests {
		if got := FormatSize(in); got != want {
			t.Errorf("FormatSize(%d) = %q, want %q", in, got, want)
		}
	}
}

func TestPattern(t *testing.T) {
	tests := []struct {
		in, want, wantErr string
	}{
		{in: ".env", want: ".env"},
		{in: "./.env", want: ".env"},
		{in: ".aws/", want: ".aws/"},
		{in: "a//b/", want: "a/b/"},
		{in: ".env.*", want: ".env.*"},
		{in: "/etc/foo/", want: "/etc/foo/"},
		{in: "sub/../x", want: "x"},
		{in: "", wantErr: "is empty"},
		{in: "..", wantErr: "not inside the workdir"},
		{in: "../x", wantErr: "not inside the workdir"},
		{in: ".", wantErr: "not inside the workdir"},
		{in: "/", wantErr: "root directory"},
		{in: "*/x", want: "*/x"},
		{in: ".git/modules/*/hooks/", want: ".git/modules/*/hooks/"},
		{in: "a/[x/b", wantErr: "not a valid glob"},
		{in: "[x", wantErr: "not a valid glob"},
		{in: "a\x00", wantErr: "NUL"},
	}
	for _, tt := range tests {
		got, err := Pattern(tt.in)
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Pattern(%q) error = %v, want %q", tt.in, err, tt.wantErr)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("Pattern(%q) = %q, %v; want %q", tt.in, got, err, tt.want)
		}
	}
}

func TestPosition(t *testing.T) {
	data := []byte("{\n  \"a\": 1,\n  x\n}")
	tests := []struct {
		offset    int64
		line, col int
	}{{0, 1, 1}, {1, 1, 1}, {2, 1, 2}, {15, 3, 3}, {100, 4, 1}}
	for _, tt := range tests {
		line, col := position(data, tt.offset)
		if line != tt.line || col != tt.col {
			t.Errorf("position(%d) = %d:%d, want %d:%d", tt.offset, line, col, tt.line, tt.col)
		}
	}
}
