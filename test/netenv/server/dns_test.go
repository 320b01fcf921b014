package main

import (
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/net/dns/dnsmessage"
)

// TestZoneStaysInTestNet: every public answer is in TEST-NET-2, so that no
// test can reach a real host through this server.
func TestZoneStaysInTestNet(t *testing.T) {
	testNet := netip.MustParsePrefix("198.51.100.0/24")
	for name, a := range zone {
		if !a.Is4() || (!testNet.Contains(a) && !a.IsPrivate() && !a.IsLoopback() && !a.IsLinkLocalUnicast()) {
			t.Errorf("%s → %v: neither in 198.51.100.0/24 nor a floor address", name, a)
		}
		if !strings.HasSuffix(name, ".test") {
			t.Errorf("%s: not under the reserved .test TLD", name)
		}
	}
}

func TestAnswer(t *testing.T) {
	qlog, err := openQueryLog(filepath.Join(t.TempDir(), "q.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer qlog.Close()
	for _, tc := range []struct {
		name  string
		typ   dnsmessage.Type
		rcode dnsmessage.RCode
		want  string // the A answer, "" for none
	}{
		{"allowed.test.", dnsmessage.TypeA, dnsmessage.RCodeSuccess, "198.51.100.10"},
		{"WWW.Allowed.Test.", dnsmessage.TypeA, dnsmessage.RCodeSuccess, "198.51.100.10"},
		{"private.test.", dnsmessage.TypeA, dnsmessage.RCodeSuccess, "10.0.0.5"},
		{"allowed.test.", dnsmessage.TypeAAAA, dnsmessage.RCodeSuccess, ""},
		{"nothing.test.", dnsmessage.TypeA, dnsmessage.RCodeNameError, ""},
	} {
		b := dnsmessage.NewBuilder(nil, dnsmessage.Header{ID: 7, RecursionDesired: true})
		b.StartQuestions()
		b.Question(dnsmessage.Question{Name: dnsmessage.MustNewName(tc.name), Type: tc.typ, Class: dnsmessage.ClassINET})
		req, _ := b.Finish()
		out, err := answer(req, qlog)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		var m dnsmessage.Message
		if err := m.Unpack(out); err != nil {
			t.Fatalf("%s: unpacking the answer: %v", tc.name, err)
		}
		got := ""
		if len(m.Answers) == 1 {
			got = netip.AddrFrom4(m.Answers[0].Body.(*dnsmessage.AResource).A).String()
		}
		if m.ID != 7 || m.RCode != tc.rcode || got != tc.want || len(m.Answers) > 1 {
			t.Errorf("%s %v: id %d rcode %v answer %q (%d), want rcode %v answer %q", tc.name, tc.typ, m.ID, m.RCode, got, len(m.Answers), tc.rcode, tc.want)
		}
	}
	b, _ := os.ReadFile(qlog.f.Name())
	if string(b) != "allowed.test\nwww.allowed.test\nprivate.test\nallowed.test\nnothing.test\n" {
		t.Errorf("query log: %q", b)
	}
}
