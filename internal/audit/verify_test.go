package audit

import (
	"slices"
	"strconv"
	"strings"
	"testing"
)

func TestVerifyDetectsTampering(t *testing.T) {
	_, orig := writeLog(t, 10)
	origHead := Head{Session: testSession, Seq: 10, Hash: hashOf(t, orig[9])}
	tests := []struct {
		name   string
		tamper func(lines []string, h *Head) []string
		head   bool     // verify against the head
		want   []string // the problems, exactly; none means the log verifies
	}{
		{name: "untouched", head: true},
		{name: "untouched without head"},
		{name: "field value changed", head: true,
			tamper: func(l []string, _ *Head) []string {
				l[6] = strings.Replace(l[6], `"n":7`, `"n":8`, 1)
				return l
			},
			want: []string{"line 7 (seq 7): hash does not match its content"}},
		{name: "time changed", head: true,
			tamper: func(l []string, _ *Head) []string {
				l[2] = strings.Replace(l[2], "10:00:02Z", "09:59:02Z", 1)
				return l
			},
			want: []string{"line 3 (seq 3): hash does not match its content"}},
		{name: "middle line removed", head: true,
			tamper: func(l []string, _ *Head) []string { return slices.Delete(l, 8, 9) },
			want:   []string{"line 9: seq 10 follows seq 8: seq 9 was removed"}},
		{name: "three middle lines removed", head: true,
			tamper: func(l []string, _ *Head) []string { return slices.Delete(l, 3, 6) },
			want:   []string{"line 4: seq 7 follows seq 3: seqs 4-6 were removed"}},
		{name: "first line removed", head: true,
			tamper: func(l []string, _ *Head) []string { return l[1:] },
			want:   []string{"line 1: the log starts at seq 2: seq 1 was removed"}},
		{name: "two lines swapped", head: true,
			tamper: func(l []string, _ *Head) []string {
				l[2], l[3] = l[3], l[2]
				return l
			},
			want: []string{
				"line 3: seq 4 follows seq 2: seq 3 comes later, at line 4 (reordered)",
				"line 4: seq 3 follows seq 4: the line is out of order (reordered)",
			}},
		{name: "forged line inserted with a recomputed hash and a wrong prev", head: true,
			tamper: func(l []string, _ *Head) []string {
				forged := strings.Replace(l[4], `"event 5"`, `"forged"`, 1)
				forged = rehash(t, strings.Replace(forged, `"prev":"`+hashOf(t, l[3]), `"prev":"`+hashOf(t, l[2]), 1))
				return slices.Insert(l, 4, forged)
			},
			want: []string{
				"line 5 (seq 5): prev does not match the hash of line 4 (inserted, reordered or removed)",
				"line 6: seq 5 follows seq 5: seq 5 appeared before (a line was inserted, repeated or reordered)",
			}},
		{name: "forged line inserted with a correct prev", head: true,
			tamper: func(l []string, _ *Head) []string {
				return slices.Insert(l, 4, rehash(t, strings.Replace(l[4], `"event 5"`, `"forged"`, 1)))
			},
			want: []string{"line 6: seq 5 follows seq 5: seq 5 appeared before (a line was inserted, repeated or reordered)"}},
		{name: "line of another session", head: true,
			tamper: func(l []string, _ *Head) []string {
				l[4] = rehash(t, strings.Replace(l[4], testSession, "ffffff", 1))
				return l
			},
			want: []string{
				"line 5 (seq 5): session ffffff differs from the log's session a1b2c3",
				"line 6 (seq 6): prev does not match the hash of line 5 (inserted, reordered or removed)",
			}},
		{name: "tail truncated, without head (undetectable: the documented limitation)",
			tamper: func(l []string, _ *Head) []string { return l[:7] }},
		{name: "tail truncated, with head", head: true,
			tamper: func(l []string, _ *Head) []string { return l[:7] },
			want:   []string{"end of log: the last seq is 7 (line 7), but the head records seq 10: the tail was cut off (seqs 8-10 are missing)"}},
		{name: "log emptied, with head", head: true,
			tamper: func([]string, *Head) []string { return nil },
			want:   []string{"end of log: the log has no readable line, but the head records seq 10: the tail was cut off (seqs 1-10 are missing)"}},
		{name: "line removed and the chain rewritten: only the head notices", head: true,
			tamper: func(l []string, _ *Head) []string {
				l = slices.Delete(l, 4, 5)
				for i := 4; i < len(l); i++ {
					l[i] = strings.Replace(l[i], `"seq":`+strconv.Itoa(i+2), `"seq":`+strconv.Itoa(i+1), 1)
					l[i] = rehash(t, strings.Replace(l[i], `"prev":"`+hashOf(t, orig[i]), `"prev":"`+hashOf(t, l[i-1]), 1))
				}
				return l
			},
			want: []string{"end of log: the last seq is 9 (line 9), but the head records seq 10: the tail was cut off (seq 10 is missing)"}},
		{name: "head hash edited", head: true,
			tamper: func(l []string, h *Head) []string { h.Hash = strings.Repeat("ab", 32); return l },
			want:   []string{"head (seq 10): records hash abababababab…, but the line with seq 10 has hash " + hashOf(t, orig[9])[:12] + "… (the head or the log was edited)"}},
		{name: "head seq lowered", head: true,
			tamper: func(l []string, h *Head) []string { h.Seq = 9; return l },
			want:   []string{"head (seq 9): records hash " + origHead.Hash[:12] + "…, but the line with seq 9 has hash " + hashOf(t, orig[8])[:12] + "… (the head or the log was edited)"}},
		{name: "head seq raised", head: true,
			tamper: func(l []string, h *Head) []string { h.Seq = 11; return l },
			want:   []string{"end of log: the last seq is 10 (line 10), but the head records seq 11: the tail was cut off (seq 11 is missing)"}},
		{name: "head of another session", head: true,
			tamper: func(l []string, h *Head) []string { h.Session = "ffffff"; return l },
			want:   []string{"head (seq 10): records session ffffff, but the log is of session a1b2c3"}},
		{name: "line is not JSON", head: true,
			tamper: func(l []string, _ *Head) []string { l[1] = "hello"; return l },
			want:   []string{"line 2: not an audit line: not a JSON object"}},
		{name: "reserved key smuggled in as a field", head: true,
			tamper: func(l []string, _ *Head) []string {
				l[1] = rehash(t, strings.Replace(l[1], `"n":2`, `"n":2,"Seq":99`, 1))
				return l
			},
			want: []string{`line 2: not an audit line: field "Seq" is reserved`}},
		{name: "last line cut mid-line", head: true,
			tamper: func(l []string, _ *Head) []string { l[9] = l[9][:40]; return l },
			want: []string{"line 10: last line has no newline: the writer stopped mid-line or the file was cut",
				"end of log: the last seq is 9 (line 10), but the head records seq 10: the tail was cut off (seq 10 is missing)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lines, head := slices.Clone(orig), origHead
			if tt.tamper != nil {
				lines = tt.tamper(lines, &head)
			}
			text := joinLines(lines)
			if tt.name == "last line cut mid-line" {
				text = strings.TrimSuffix(text, "\n")
			}
			var h *Head
			if tt.head {
				h = &head
			}
			rep, err := Verify(strings.NewReader(text), h)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, p := range rep.Problems {
				got = append(got, p.String())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("problems:\n got %q\nwant %q", got, tt.want)
			}
			if rep.OK() != (len(tt.want) == 0) || (rep.Err() == nil) != rep.OK() {
				t.Errorf("OK() = %v, Err() = %v with %d problems", rep.OK(), rep.Err(), len(rep.Problems))
			}
		})
	}
}
