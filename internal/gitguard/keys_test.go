package gitguard

import (
	"strings"
	"testing"
)

// TestJudge: every key that runs a program is a finding, with the reason
// that names what git does with it; the keys git and its common tools write
// into a repository are not.
func TestJudge(t *testing.T) {
	cases := []struct {
		config  string
		wantWhy string // "" for inert; else a part of the reason
	}{
		// Inert: what clone, init, remote, branch and submodule write.
		{"[core]\nrepositoryformatversion = 0\nfilemode = true\nbare = false\nlogallrefupdates = true\nignorecase = true\nprecomposeunicode = true\nsymlinks = false", ""},
		{"[core]\n\tworktree = ../../../lib", ""},
		{"[remote \"origin\"]\nurl = https://github.com/o/r.git\nfetch = +refs/heads/*:refs/remotes/origin/*", ""},
		{"[remote \"origin\"]\nurl = git@github.com:o/r.git", ""},
		{"[remote \"origin\"]\nurl = ssh://git@host:22/r.git", ""},
		{"[remote \"origin\"]\nurl = ../other", ""},
		{"[remote \"origin\"]\nurl = /srv/git/r.git", ""},
		{"[remote \"origin\"]\nurl = file:///srv/git/r.git", ""},
		{"[remote \"origin\"]\nurl = ssh://[::1]/r.git", ""},
		{"[remote \"origin\"]\ntagopt = --no-tags", ""},
		{"[branch \"main\"]\nremote = origin\nmerge = refs/heads/main", ""},
		{"[user]\nname = A\nemail = a@b", ""},
		{"[submodule \"lib\"]\nurl = https://x/lib.git\nactive = true\nupdate = rebase", ""},
		{"[extensions]\nworktreeConfig = true", ""},
		{"[lfs]\nrepositoryformatversion = 0", ""},
		{"[advice]\ndetachedHead = false", ""},
		// Programs, by key.
		{"[core]\nfsmonitor = touch /tmp/x", "every git status"},
		{"[core]\nfsmonitor", "every git status"},
		{"[CORE]\nFSMonitor = x", "every git status"},
		{"[core]\nhooksPath = /tmp/h", "hooks of another directory"},
		{"[core]\nsshCommand = x", "fetch, pull and push"},
		{"[ssh]\nvariant = simple", "ssh"},
		{"[core]\ngitProxy = x", "fetch and pull"},
		{"[core]\naskPass = x", "password"},
		{"[core]\neditor = x", "commit"},
		{"[sequence]\neditor = x", "rebase"},
		{"[core]\npager = x", "log and diff"},
		{"[pager]\nlog = x", "output"},
		{"[core]\nalternateRefsCommand = x", "fetch and push"},
		{"[core]\nattributesFile = x", "drivers"},
		{"[include]\npath = x", "more configuration"},
		{"[includeIf \"gitdir:/x/\"]\npath = x", "more configuration"},
		{"[alias]\nst = !touch /tmp/x", "shell command"},
		{"[diff]\nexternal = x", "git diff"},
		{"[diff \"x\"]\ntextconv = x", "blame"},
		{"[diff \"x\"]\ncommand = x", "git diff"},
		{"[difftool \"x\"]\ncmd = x", "difftool"},
		{"[mergetool \"x\"]\ncmd = x", "mergetool"},
		{"[merge \"x\"]\ndriver = x", "merge, pull"},
		{"[filter \"x\"]\nclean = x", "checkout, add, status"},
		{"[filter \"x\"]\nprocess = x", "checkout, add, status"},
		{"[credential]\nhelper = x", "credential"},
		{"[credential \"https://x\"]\nhelper = x", "credential"},
		{"[gpg]\nprogram = x", "sign"},
		{"[gpg \"ssh\"]\ndefaultKeyCommand = x", "sign"},
		{"[commit]\ngpgSign = true", "signing program"},
		{"[log]\nshowSignature = true", "git log"},
		{"[protocol]\nallow = always", "ext::"},
		{"[protocol \"ext\"]\nallow = always", "ext::"},
		{"[remote \"o\"]\nuploadpack = x", "fetch"},
		{"[remote \"o\"]\nreceivepack = x", "push"},
		{"[remote \"o\"]\nvcs = x", "remote helper"},
		{"[url \"ext::sh -c x\"]\ninsteadOf = https://", "rewrites URLs"},
		{"[submodule \"x\"]\nupdate = !touch /tmp/x", "submodule update"},
		{"[trailer \"x\"]\ncommand = x", "trailer"},
		{"[interactive]\ndiffFilter = x", "add -p"},
		{"[sendemail]\nsmtpServer = /bin/x", "send-email"},
		{"[imap]\ntunnel = x", "imap-send"},
		{"[tar \"tgz\"]\ncommand = x", "archive"},
		{"[uploadpack]\npackObjectsHook = x", "serves a fetch"},
		{"[web]\nbrowser = x", "web pages"},
		{"[man \"x\"]\ncmd = x", "manual"},
		{"[guitool \"x\"]\ncmd = x", "git gui"},
		{"[safe]\ndirectory = *", "trusts"},
		{"[init]\ntemplateDir = x", "hooks"},
		{"[trace2]\nnormalTarget = /home/u/.bashrc", "trace"},
		{"[http]\nproxy = x", "HTTP"},
		{"[core]\nsomethingNew = x", "how git reads"},
		{"[neverheardof]\nkey = x", notInert},
		// Inert keys with values that are not.
		{"[remote \"o\"]\nurl = ext::sh -c touch% /tmp/x", "git-remote-ext"},
		{"[remote \"o\"]\nurl = fd::0", "git-remote-fd"},
		{"[remote \"o\"]\npushurl = foo::bar", "git-remote-foo"},
		{"[remote \"o\"]\nurl = weird://host/r", "git-remote-weird"},
		{"[remote \"o\"]\nurl = -oProxyCommand=x", "option"},
		{"[remote \"o\"]\nurl = ssh://-oProxyCommand=x/r", "option"},
		{"[remote \"o\"]\nurl = user@-oProxyCommand=x:r", "option"},
		{"[submodule \"x\"]\nurl = ext::x", "git-remote-ext"},
		{"[remote \"o\"]\nurl = \"https://x/\\n\"", "control character"},
	}
	for _, tc := range cases {
		es, err := parseConfig([]byte(tc.config))
		if err != nil || len(es) == 0 {
			t.Fatalf("%q: %v", tc.config, err)
		}
		var got []string
		for _, e := range es {
			if why := judge(e); why != "" {
				got = append(got, e.Key+": "+why)
			}
		}
		switch {
		case tc.wantWhy == "" && len(got) > 0:
			t.Errorf("%q: judged %q, want inert", tc.config, got)
		case tc.wantWhy != "" && (len(got) != 1 || !strings.Contains(got[0], tc.wantWhy)):
			t.Errorf("%q: judged %q, want one finding saying %q", tc.config, got, tc.wantWhy)
		}
	}
}

// TestKeyTables checks the tables' form: lowercase patterns of two or three
// parts, no pattern in both tables, a reason for every program key.
func TestKeyTables(t *testing.T) {
	seen := map[string]bool{}
	check := func(p string) {
		parts := strings.Split(p, ".")
		if p != strings.ToLower(p) || len(parts) < 2 || len(parts) > 3 || len(parts) == 3 && parts[1] != "*" {
			t.Errorf("pattern %q: want lowercase section.name, section.*.name or section.*", p)
		}
		if seen[p] {
			t.Errorf("pattern %q is listed twice", p)
		}
		seen[p] = true
	}
	for _, k := range inertKeys {
		check(k.pattern)
	}
	for _, r := range programKeys {
		check(r.pattern)
		if r.why == "" {
			t.Errorf("%q has no reason", r.pattern)
		}
	}
}
