package gitguard

import (
	"fmt"
	"strings"
)

// A config key is judged by two tables. inertKeys are the keys git only
// stores or compares, the ones git itself and its common tools (clone,
// init, remote, branch, submodule, sparse-checkout, lfs install's format
// key) write into a repository: a new or changed key that is not among
// them is a finding, whatever it is, so a key this table does not know
// errs on the safe side. programKeys only explain: they name what git does
// with the keys that run programs or steer where git goes, for the report.
// Patterns are "section.name", "section.*.name" (any subsection) and
// "section.*" (any key of the section), lowercased.

// inert is an inert key; check, when set, says why a value is not.
type inert struct {
	pattern string
	check   func(value string) string
}

var inertKeys = []inert{
	{pattern: "core.repositoryformatversion"},
	{pattern: "core.filemode"},
	{pattern: "core.bare"},
	{pattern: "core.logallrefupdates"},
	{pattern: "core.ignorecase"},
	{pattern: "core.precomposeunicode"},
	{pattern: "core.symlinks"},
	{pattern: "core.worktree"}, // where the work tree is; submodule checkouts set it
	{pattern: "core.autocrlf"},
	{pattern: "core.eol"},
	{pattern: "core.safecrlf"},
	{pattern: "core.quotepath"},
	{pattern: "core.sparsecheckout"},
	{pattern: "core.sparsecheckoutcone"},
	{pattern: "core.untrackedcache"},
	{pattern: "core.splitindex"},
	{pattern: "core.checkstat"},
	{pattern: "core.trustctime"},
	{pattern: "core.abbrev"},
	{pattern: "core.compression"},
	{pattern: "core.loosecompression"},
	{pattern: "core.preloadindex"},
	{pattern: "core.commitgraph"},
	{pattern: "core.multipackindex"},
	{pattern: "extensions.objectformat"},
	{pattern: "extensions.refstorage"},
	{pattern: "extensions.worktreeconfig"}, // config.worktree is checked like config
	{pattern: "remote.*.url", check: checkURL},
	{pattern: "remote.*.pushurl", check: checkURL},
	{pattern: "remote.*.fetch"},
	{pattern: "remote.*.push"},
	{pattern: "remote.*.prune"},
	{pattern: "remote.*.prunetags"},
	{pattern: "remote.*.tagopt"},
	{pattern: "remote.*.mirror"},
	{pattern: "remote.*.skipdefaultupdate"},
	{pattern: "remote.*.skipfetchall"},
	{pattern: "remote.*.promisor"},
	{pattern: "remote.*.partialclonefilter"},
	{pattern: "branch.*.remote"},
	{pattern: "branch.*.pushremote"},
	{pattern: "branch.*.merge"},
	{pattern: "branch.*.rebase"},
	{pattern: "branch.*.description"},
	{pattern: "user.name"},
	{pattern: "user.email"},
	{pattern: "submodule.*.url", check: checkURL},
	{pattern: "submodule.*.update", check: checkUpdate},
	{pattern: "submodule.*.active"},
	{pattern: "submodule.*.branch"},
	{pattern: "submodule.*.ignore"},
	{pattern: "submodule.*.fetchrecursesubmodules"},
	{pattern: "submodule.*.shallow"},
	{pattern: "submodule.active"},
	{pattern: "init.defaultbranch"},
	{pattern: "pull.rebase"},
	{pattern: "pull.ff"},
	{pattern: "push.default"},
	{pattern: "push.autosetupremote"},
	{pattern: "fetch.prune"},
	{pattern: "fetch.prunetags"},
	{pattern: "merge.conflictstyle"},
	{pattern: "rerere.enabled"},
	{pattern: "rerere.autoupdate"},
	{pattern: "gc.auto"},
	{pattern: "index.version"},
	{pattern: "index.sparse"},
	{pattern: "index.skiphash"},
	{pattern: "lfs.repositoryformatversion"},
	{pattern: "status.showuntrackedfiles"},
	{pattern: "color.ui"},
	{pattern: "advice.*"},
}

// reason is what git does with keys matching pattern.
type reason struct {
	pattern, why string
}

// programKeys, from git-config(1): every key that makes git run a program
// or a shell command, or decides which program, file or server it uses.
var programKeys = []reason{
	{"core.fsmonitor", "runs a program at every git status, diff, add and commit"},
	{"core.fsmonitorhookversion", "configures the fsmonitor program"},
	{"core.hookspath", "makes git run the hooks of another directory"},
	{"core.sshcommand", "runs a program at fetch, pull and push"},
	{"ssh.*", "chooses how git runs ssh at fetch, pull and push"},
	{"core.gitproxy", "runs a program at fetch and pull"},
	{"core.askpass", "runs a program when git asks for a password"},
	{"core.editor", "runs a program at commit, tag and rebase"},
	{"sequence.editor", "runs a program at rebase -i"},
	{"core.pager", "runs a program when git shows log and diff output"},
	{"pager.*", "runs a program when git shows that command's output"},
	{"core.alternaterefscommand", "runs a program at fetch and push"},
	{"core.attributesfile", "chooses filter, diff and merge drivers, which run programs"},
	{"core.excludesfile", "reads ignore rules from another file"},
	{"include.path", "reads more configuration from another file"},
	{"includeif.*.path", "reads more configuration from another file"},
	{"alias.*", "defines a git command, which may run a shell command"},
	{"diff.external", "runs a program at git diff"},
	{"diff.*.command", "runs a program at git diff"},
	{"diff.*.textconv", "runs a program at git diff, log -p, show and blame"},
	{"diff.tool", "runs a program at git difftool"},
	{"diff.guitool", "runs a program at git difftool"},
	{"difftool.*", "runs a program at git difftool"},
	{"merge.tool", "runs a program at git mergetool"},
	{"merge.guitool", "runs a program at git mergetool"},
	{"mergetool.*", "runs a program at git mergetool"},
	{"merge.*.driver", "runs a program at merge, pull, rebase and cherry-pick"},
	{"filter.*", "runs a program at checkout, add, status and diff"},
	{"credential.*", "runs a credential helper and decides where your credentials go"},
	{"gpg.*", "runs a program to sign or verify"},
	{"commit.gpgsign", "runs the signing program at every commit"},
	{"tag.gpgsign", "runs the signing program at every tag"},
	{"tag.forcesignannotated", "runs the signing program at every tag"},
	{"push.gpgsign", "runs the signing program at push"},
	{"log.showsignature", "runs the verifying program at git log"},
	{"merge.verifysignatures", "runs the verifying program at merge and pull"},
	{"pull.verifysignatures", "runs the verifying program at pull"},
	{"user.signingkey", "chooses the key the signing program uses"},
	{"protocol.*", "allows transports that run programs (ext::)"},
	{"remote.*.uploadpack", "runs a program at fetch and pull"},
	{"remote.*.receivepack", "runs a program at push"},
	{"remote.*.vcs", "runs a remote helper program at fetch, pull and push"},
	{"remote.*.proxy", "sends fetch and push through a proxy it names"},
	{"http.*", "steers git's HTTP connections: proxies, certificates, cookies, headers"},
	{"url.*", "rewrites URLs, to transports that run programs among them"},
	{"trailer.*", "runs a program at commit --trailer and interpret-trailers"},
	{"interactive.difffilter", "runs a program at git add -p"},
	{"sendemail.*", "runs programs at git send-email"},
	{"imap.tunnel", "runs a program at git imap-send"},
	{"tar.*", "runs a program at git archive"},
	{"uploadpack.*", "runs a program when git serves a fetch"},
	{"receive.*", "steers what git does when it receives a push"},
	{"browser.*", "runs a program to show help or web pages"},
	{"web.browser", "runs a program to show web pages"},
	{"help.*", "chooses how git shows help, and may run a guessed command"},
	{"man.*", "runs a program to show manual pages"},
	{"instaweb.*", "runs a web server and browser"},
	{"guitool.*", "runs a program from git gui"},
	{"safe.*", "changes which repositories and directories git trusts"},
	{"init.templatedir", "copies hooks into repositories git creates"},
	{"trace2.*", "writes git's trace to a file or socket it names"},
	{"fsmonitor.*", "configures the fsmonitor"},
	{"extensions.partialclone", "makes git fetch missing objects at checkout, diff and blame"},
	{"gc.*", "changes what git gc --auto does in the background"},
	{"maintenance.*", "changes what git's background maintenance runs"},
	{"core.*", "changes how git reads and writes the repository"},
}

// notInert is the reason for a key that neither table names.
const notInert = "not a key stockade knows to be inert"

// judge says why e is dangerous, or "" when it is inert.
func judge(e entry) string {
	for _, k := range inertKeys {
		if !match(k.pattern, e) {
			continue
		}
		if k.check == nil {
			return ""
		}
		return k.check(e.Value)
	}
	for _, r := range programKeys {
		if match(r.pattern, e) {
			return r.why
		}
	}
	return notInert
}

// match reports whether e's key has the form of pattern.
func match(pattern string, e entry) bool {
	section, sub, name := e.parts()
	p := strings.Split(pattern, ".")
	if p[0] != section {
		return false
	}
	switch {
	case len(p) == 2 && p[1] == "*":
		return true
	case len(p) == 2:
		return sub == "" && p[1] == name
	default:
		return sub != "" && p[2] == name
	}
}

// ordinarySchemes are the URL schemes git handles itself. Any other one
// ("foo://") makes git run a helper program, git-remote-foo.
var ordinarySchemes = map[string]bool{
	"http": true, "https": true, "ssh": true, "git": true, "file": true,
	"git+ssh": true, "ssh+git": true,
}

// checkURL says why git would run a program, or pass an option to one,
// for the remote or submodule URL u; "" when it would not.
func checkURL(u string) string {
	// transport.c: "<transport>::<address>" runs git-remote-<transport>;
	// ext:: runs any command, fd:: talks to inherited descriptors.
	scheme := schemeLen(u)
	if strings.HasPrefix(u[scheme:], "::") {
		return fmt.Sprintf("a URL that runs the helper git-remote-%s", u[:scheme])
	}
	if strings.HasPrefix(u[scheme:], "://") && !ordinarySchemes[strings.ToLower(u[:scheme])] {
		return fmt.Sprintf("a URL that runs the helper git-remote-%s", u[:scheme])
	}
	if strings.HasPrefix(u, "-") || strings.Contains(u, "://-") || strings.Contains(u, "@-") {
		return "a URL that ssh would take for an option (CVE-2017-1000117)"
	}
	for _, c := range []byte(u) {
		if c < 0x20 || c == 0x7f {
			return "a URL with a control character (CVE-2020-5260)"
		}
	}
	return ""
}

// schemeLen is the length of u's leading scheme characters (git's
// is_urlschemechar: a letter, then letters, digits, "+", "-", ".").
func schemeLen(u string) int {
	for i := 0; i < len(u); i++ {
		c := u[i]
		if isAlpha(c) || i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.') {
			continue
		}
		return i
	}
	return len(u)
}

// checkUpdate: submodule.<name>.update = !command runs command.
func checkUpdate(v string) string {
	if strings.HasPrefix(strings.TrimSpace(v), "!") {
		return "runs a command at git submodule update"
	}
	return ""
}
