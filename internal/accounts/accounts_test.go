package accounts

import (
	"strings"
	"testing"
)

const hostPasswd = `root:x:0:0:root:/root:/bin/bash
daemon:x:1:1:daemon:/usr/sbin:/usr/sbin/nologin
alice:x:1000:1000:Alice,,,:/home/alice:/bin/bash
bob:x:1001:1001:Bob:/home/bob:/bin/bash
postgres:x:110:118:PostgreSQL administrator:/var/lib/postgresql:/bin/bash
nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin
`

const hostGroup = `root:x:0:
tty:x:5:
sudo:x:27:alice,bob
docker:x:999:bob
alice:x:1000:
bob:x:1001:
ssl-cert:x:117:postgres
postgres:x:118:
nogroup:x:65534:
`

func TestFilter(t *testing.T) {
	for _, tt := range []struct {
		name          string
		uid, gid      int
		passwd, group string
	}{
		{"user", 1000, 1000,
			"root:x:0:0:root:/root:/bin/bash\nalice:x:1000:1000:Alice,,,:/home/alice:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
			"root:x:0:\ntty:x:5:\nsudo:x:27:alice\nalice:x:1000:\nnogroup:x:65534:\n"},
		{"root", 0, 0,
			"root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
			"root:x:0:\ntty:x:5:\nnogroup:x:65534:\n"},
		{"unknown uid", 4242, 4242,
			"root:x:0:0:root:/root:/bin/bash\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
			"root:x:0:\ntty:x:5:\nnogroup:x:65534:\n"},
	} {
		pw, gr := Filter([]byte(hostPasswd), []byte(hostGroup), tt.uid, tt.gid)
		if pw != tt.passwd {
			t.Errorf("%s: passwd\n%s\nwant\n%s", tt.name, pw, tt.passwd)
		}
		if gr != tt.group {
			t.Errorf("%s: group\n%s\nwant\n%s", tt.name, gr, tt.group)
		}
		for _, other := range []string{"bob", "postgres", "daemon", "docker"} {
			if strings.Contains(pw+gr, other) {
				t.Errorf("%s: %s is listed", tt.name, other)
			}
		}
	}
}
