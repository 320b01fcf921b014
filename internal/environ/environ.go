// Package environ builds the sandbox's environment from scratch instead of
// inheriting the host's (docs/architecture.md, "Enforcement order", step H3).
//
// Build starts from nothing and adds, from lowest to highest precedence:
//
//  1. host variables whose names are on a small allowlist (PATH, HOME, TERM,
//     LANG, LC_*, TZ, …), unless the name is also credential-shaped;
//  2. host variables named in pass ("--env NAME");
//  3. variables set in pass ("--env NAME=VALUE");
//  4. extra, the variables the sandbox itself sets (HOME, TMPDIR, …).
//
// If nothing set PATH, it is set to DefaultPath. Everything else on the host
// is dropped: loader variables (LD_PRELOAD), exported shell functions
// (BASH_FUNC_x%%), and every credential-shaped name (*_TOKEN, AWS_*, SSH_*, …).
// Naming a variable in pass is the only way a credential-shaped name gets in,
// so handing a secret to the agent is always an explicit act.
//
// The package is pure: it reads no environment and makes no system calls.
package environ

import (
	"fmt"
	"slices"
	"strings"
)

// DefaultPath is the PATH inside the sandbox when neither the host's
// allowlisted PATH, pass nor extra provides one.
const DefaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// allowNames are host variables that describe the terminal, locale and the
// user's tool preferences. None of them carries a secret or changes how
// programs load code. TMPDIR is deliberately absent: the sandbox sets it.
var allowNames = []string{
	"PATH", "HOME", "USER", "LOGNAME", "SHELL",
	"TERM", "COLORTERM", "TERM_PROGRAM", "TERM_PROGRAM_VERSION", "COLUMNS", "LINES",
	"LANG", "LANGUAGE", "TZ",
	"EDITOR", "VISUAL", "PAGER", "LESS", "LS_COLORS",
	"NO_COLOR", "FORCE_COLOR", "CLICOLOR", "CLICOLOR_FORCE",
}

// allowPrefixes are allowlisted name families.
var allowPrefixes = []string{"LC_"}

// credentialPatterns are names that look like they hold a secret. A leading
// or trailing "*" matches any characters; matching ignores case. The list is
// wide on purpose: a false positive costs one --env flag, a false negative
// leaks a key into a process we assume is hostile.
var credentialPatterns = []string{
	"*_TOKEN", "*_TOKENS", "*_SECRET", "*_SECRETS", "*_KEY", "*_KEYS", "*_APIKEY",
	"*_PASSWORD", "*_PASSWD", "*_PASS", "*_PASSPHRASE", "*_PWD",
	"*_CREDENTIAL", "*_CREDENTIALS", "*_AUTH", "*_COOKIE", "*_DSN",
	"*_CONNECTION_STRING", "DATABASE_URL", "PGPASSWORD", "PGPASSFILE",
	"AWS_*", "AZURE_*", "ARM_*", "GOOGLE_APPLICATION_CREDENTIALS", "GOOGLE_*", "GCP_*",
	"CLOUDSDK_*", "SSH_*", "GPG_*", "GNUPGHOME", "GH_*", "GITHUB_*", "GITLAB_*", "CI_*",
	"NPM_TOKEN", "NPM_CONFIG_*", "DOCKER_*", "KUBECONFIG", "VAULT_*",
	"OPENAI_*", "ANTHROPIC_*", "GEMINI_*", "HF_*", "HUGGING_FACE_*", "NETRC",
	"SLACK_*", "STRIPE_*", "TWILIO_*", "SENTRY_*", "DIGITALOCEAN_*", "HEROKU_*",
}

// IsCredentialName reports whether name looks like it holds a secret
// (GITHUB_TOKEN, AWS_SECRET_ACCESS_KEY, SSH_AUTH_SOCK, …). Matching ignores case.
func IsCredentialName(name string) bool {
	upper := strings.ToUpper(name)
	for _, p := range credentialPatterns {
		if matchPattern(p, upper) {
			return true
		}
	}
	return false
}

// matchPattern matches name against a pattern with an optional "*" at either
// end. A bare "*" is not used and would match everything.
func matchPattern(pattern, name string) bool {
	lead := strings.HasPrefix(pattern, "*")
	trail := strings.HasSuffix(pattern, "*")
	core := strings.Trim(pattern, "*")
	switch {
	case lead && trail:
		return strings.Contains(name, core)
	case lead:
		return strings.HasSuffix(name, core)
	case trail:
		return strings.HasPrefix(name, core)
	default:
		return name == core
	}
}

func allowlisted(name string) bool {
	for _, n := range allowNames {
		if name == n {
			return true
		}
	}
	for _, p := range allowPrefixes {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return false
}

// ParseEntry splits a pass entry ("NAME" or "NAME=VALUE"). The name must be a
// shell identifier ([A-Za-z_][A-Za-z0-9_]*) and the value must not contain a
// NUL byte, because neither could reach the agent intact.
func ParseEntry(entry string) (name, value string, hasValue bool, err error) {
	name, value, hasValue = strings.Cut(entry, "=")
	if !validName(name) {
		return "", "", false, fmt.Errorf("%q is not a valid variable name; use letters, digits and _ (not starting with a digit)", name)
	}
	if strings.ContainsRune(value, 0) {
		return "", "", false, fmt.Errorf("the value of %s contains a NUL byte", name)
	}
	return name, value, hasValue, nil
}

func validName(name string) bool {
	if name == "" {
		return false
	}
	for i, c := range name {
		switch {
		case c == '_', c >= 'A' && c <= 'Z', c >= 'a' && c <= 'z':
		case c >= '0' && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// Build returns the sandbox environment as sorted NAME=VALUE strings, and the
// sorted names of host variables and of invalid pass and extra entries it
// left out, for debug logging; it never contains a value. host is the host environment (os.Environ()); pass holds the
// --env entries; extra holds the variables the sandbox sets itself. Later
// entries of host and pass win over earlier ones with the same name.
//
// Precedence, highest first: extra, pass NAME=VALUE, pass NAME, allowlist.
func Build(host []string, pass []string, extra map[string]string) (env []string, dropped []string) {
	hostVals := map[string]string{}
	for _, kv := range host {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			continue
		}
		hostVals[name] = value
	}

	out := map[string]string{}
	for name, value := range hostVals {
		if allowlisted(name) && !IsCredentialName(name) {
			out[name] = value
		}
	}
	var byValue [][2]string
	for _, entry := range pass {
		name, value, hasValue, err := ParseEntry(entry)
		switch {
		case err != nil:
			// Log the name only: the value may be a secret.
			dropped = append(dropped, strings.SplitN(entry, "=", 2)[0])
		case hasValue:
			byValue = append(byValue, [2]string{name, value})
		default:
			if v, ok := hostVals[name]; ok {
				out[name] = v
			}
		}
	}
	for _, nv := range byValue {
		out[nv[0]] = nv[1]
	}
	for name, value := range extra {
		if validName(name) && !strings.ContainsRune(value, 0) {
			out[name] = value
		} else {
			dropped = append(dropped, name)
		}
	}
	if _, ok := out["PATH"]; !ok {
		out["PATH"] = DefaultPath
	}

	for name := range hostVals {
		if _, ok := out[name]; !ok {
			dropped = append(dropped, name)
		}
	}
	for name, value := range out {
		env = append(env, name+"="+value)
	}
	slices.Sort(env)
	slices.Sort(dropped)
	return env, slices.Compact(dropped)
}
