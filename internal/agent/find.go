package agent

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Install is where an agent lives on the host.
type Install struct {
	// Command is the agent's entry point with every symlink resolved.
	Command string
	// Mounts are the host trees to bind read-only so that Command runs:
	// its package, and its interpreter's installation when it is a script.
	Mounts []string
	// PathDirs go in front of the sandbox PATH (the interpreter's bin).
	PathDirs []string
	// Found are where the agent and its interpreter were found on PATH,
	// each with what it resolved to: a link in a tree the sandbox writes
	// would let an earlier session choose what is mounted.
	Found [][2]string
}

// Find locates p's binary on the host's PATH (path) and what it needs.
func Find(p Profile, path string) (Install, error) {
	bin, err := lookPath(p.Binary, path)
	if err != nil {
		return Install{}, fmt.Errorf("%s is not installed (no %q on PATH); install it with: npm install -g %s", p.Name, p.Binary, p.Package)
	}
	real, err := filepath.EvalSymlinks(bin)
	if err != nil {
		return Install{}, fmt.Errorf("resolving %s: %w", bin, err)
	}
	in := Install{Command: real, Mounts: []string{packageRoot(real)}, Found: [][2]string{{bin, real}}}
	interp, err := interpreter(real)
	if err != nil {
		return Install{}, err
	}
	if interp != "" {
		ip, err := lookPath(interp, path)
		if err != nil {
			return Install{}, fmt.Errorf("%s runs with %s, which is not on PATH", real, interp)
		}
		ipReal, err := filepath.EvalSymlinks(ip)
		if err != nil {
			return Install{}, err
		}
		// node/bin/node → mount node/ (its lib too), and put bin/ on PATH.
		in.Found = append(in.Found, [2]string{ip, ipReal})
		in.Mounts = append(in.Mounts, filepath.Dir(filepath.Dir(ipReal)))
		in.PathDirs = append(in.PathDirs, filepath.Dir(ipReal))
	}
	return in, nil
}

func lookPath(name, path string) (string, error) {
	for _, dir := range filepath.SplitList(path) {
		if dir == "" || !filepath.IsAbs(dir) {
			continue
		}
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", exec.ErrNotFound
}

// packageRoot is the nearest directory above file that holds a
// package.json (an npm package), or file's directory.
func packageRoot(file string) string {
	for d := filepath.Dir(file); d != "/" && d != "."; d = filepath.Dir(d) {
		if _, err := os.Stat(filepath.Join(d, "package.json")); err == nil {
			return d
		}
		if filepath.Base(d) == "node_modules" {
			break
		}
	}
	return filepath.Dir(file)
}

// interpreter reads a script's #! line: "node" for `#!/usr/bin/env node`,
// the path for `#!/path/to/node`, "" for a binary.
func interpreter(file string) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil && !errors.Is(err, os.ErrClosed) && line == "" {
		return "", nil
	}
	if !strings.HasPrefix(line, "#!") {
		return "", nil
	}
	fields := strings.Fields(strings.TrimPrefix(line, "#!"))
	if len(fields) == 0 {
		return "", nil
	}
	if filepath.Base(fields[0]) == "env" {
		for _, f := range fields[1:] {
			if strings.Contains(f, "/") {
				// Looked up below a PATH directory, ../.. would climb out
				// of it and choose what is mounted.
				return "", fmt.Errorf("%s runs with %q, a path where stockade looks an interpreter up by its name on PATH; give the name (#!/usr/bin/env node)", file, f)
			}
			if !strings.HasPrefix(f, "-") {
				return f, nil
			}
		}
		return "", nil
	}
	return filepath.Base(fields[0]), nil
}
