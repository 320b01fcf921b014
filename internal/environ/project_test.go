package environ

import (
	"strings"
	"testing"
)

// TestProjectSettableTable: every entry is a valid name (or a family NAME*),
// has a reason, appears once, and is not credential-shaped.
func TestProjectSettableTable(t *testing.T) {
	seen := map[string]bool{}
	for _, s := range projectSettable {
		core := strings.TrimSuffix(s.name, "*")
		switch {
		case seen[s.name]:
			t.Errorf("%q: duplicate", s.name)
		case s.why == "":
			t.Errorf("%q: no reason given", s.name)
		case !validName(core) || strings.Contains(core, "*"):
			t.Errorf("%q: not a variable name, or a family NAME*", s.name)
		case IsCredentialName(core + "X"):
			t.Errorf("%q: credential-shaped", s.name)
		}
		seen[s.name] = true
	}
}

// TestProjectSettable: the names that load code, move traffic, or carry a
// secret are refused, including lookalikes of the safe ones.
func TestProjectSettable(t *testing.T) {
	allowed := []string{"TZ", "LANG", "LC_ALL", "LC_CTYPE", "LC_MESSAGES", "NO_COLOR",
		"FORCE_COLOR", "PYTHONUNBUFFERED", "RUST_BACKTRACE", "GOTRACEBACK"}
	refused := []string{
		// The loader and language runtimes: code at every start.
		"LD_PRELOAD", "LD_LIBRARY_PATH", "LD_AUDIT", "LD_DEBUG", "NODE_OPTIONS", "NODE_PATH",
		"NODE_EXTRA_CA_CERTS", "PYTHONPATH", "PYTHONSTARTUP", "PYTHONHOME", "PYTHONWARNINGS",
		"PYTHONBREAKPOINT", "PYTHONINSPECT", "PERL5OPT", "PERL5LIB", "PERLLIB", "RUBYOPT", "RUBYLIB",
		"JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS", "CLASSPATH", "GCONV_PATH",
		"LOCPATH", "LANGUAGE", "TERMINFO", "MALLOC_CONF",
		// Shells and tools that run a configured program.
		"BASH_ENV", "ENV", "PROMPT_COMMAND", "SHELLOPTS", "PS4", "EDITOR", "VISUAL", "PAGER",
		"LESSOPEN", "MANPAGER", "BROWSER", "GOFLAGS", "GOTOOLCHAIN", "RUSTFLAGS", "RUSTC_WRAPPER",
		"CC", "CXX", "MAKEFLAGS", "NPM_CONFIG_PREFIX", "GIT_DIR", "GIT_SSH_COMMAND", "GIT_EXEC_PATH",
		"GIT_CONFIG_GLOBAL", "GIT_CONFIG_COUNT", "GIT_ASKPASS", "SSH_ASKPASS",
		// Where things are found, and where traffic goes.
		"PATH", "HOME", "TMPDIR", "XDG_CONFIG_HOME", "http_proxy", "HTTP_PROXY", "https_proxy",
		"HTTPS_PROXY", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy", "SSL_CERT_FILE",
		"SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "GOPROXY", "PIP_INDEX_URL",
		// Secrets and names that do not look like one.
		"REDIS_URL", "MONGODB_URI", "SECRET_KEY_BASE", "TOKEN", "PASSWORD", "GITHUB_TOKEN",
		"ANTHROPIC_BASE_URL",
		// Lookalikes of safe names.
		"tz", "lang", "LC_", "TZDIR", "LANGX", "NO_COLOR_X", "XTZ",
	}
	for _, n := range allowed {
		if !ProjectSettable(n) {
			t.Errorf("ProjectSettable(%q) = false, want true", n)
		}
	}
	for _, n := range refused {
		if ProjectSettable(n) {
			t.Errorf("ProjectSettable(%q) = true, want false", n)
		}
	}
}
