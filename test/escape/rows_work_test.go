package escape

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// workRows: what a coding agent must still be able to do. A sandbox that denies
// everything passes every other table; these rows keep it honest.
var workRows = []row{
	{name: "work_write_workdir", args: probe("create", "{work}/new.txt"), want: "OK"},
	{name: "work_read_etc_passwd", args: probe("read", "/etc/passwd"), want: "OK"},
	{name: "work_dev_null_and_urandom",
		args: sh("echo x >/dev/null && head -c 8 /dev/urandom | wc -c"), want: "8"},
	{name: "work_mkfifo", args: probe("mkfifo", "{work}/fifo"), want: "OK"},
	{name: "work_personality_query", args: probe("personality", "0xffffffff"), want: "OK"},
	{name: "work_netlink_route", args: probe("socket", "AF_NETLINK", "SOCK_RAW", "NETLINK_ROUTE"), want: "OK"},
	// A test suite's server on 127.0.0.1 reached by its client, in the sandbox.
	{name: "work_loopback_tcp", args: probe("listen-connect-tcp"), want: "OK"},
	{name: "work_abstract_socket_inside", args: probe("listen-connect-abstract"), want: "OK"},
	{name: "work_signal_own_child", args: sh("sleep 30 & kill $! && wait $!; echo $?"), want: "143"},
	{name: "work_script_in_tmp",
		args: sh("printf '#!/bin/sh\\necho OK\\n' >/tmp/s.sh && chmod +x /tmp/s.sh && /tmp/s.sh"), want: "OK"},
	{name: "work_exec_from_workdir",
		args: sh("cp {probe} {work}/p && {work}/p read /etc/hostname"), want: "OK"},
	{name: "work_gcc", timeout: 60 * time.Second,
		args: sh("cd {work} && printf '#include <stdio.h>\\nint main(void){puts(\"OK\");return 0;}\\n' >hello.c && gcc -o hello hello.c && ./hello"),
		want: "OK"},
	{name: "work_go_build", timeout: 180 * time.Second,
		flags: []string{"--env", "GOTOOLCHAIN=local", "--env", "GOFLAGS=-buildvcs=false"},
		args: sh("mkdir -p {work}/gohello && cd {work}/gohello && printf 'module hello\\n\\ngo 1.22\\n' >go.mod && " +
			"printf 'package main\\n\\nimport \"fmt\"\\n\\nfunc main() { fmt.Println(\"OK\") }\\n' >main.go && go build -o hello . && ./hello"),
		want: "OK"},
	// Committing in the project whose .git/config and hooks are protected.
	{name: "work_git_commit", args: sh("cd {work} && git add main.c && " +
		"git -c user.name=t -c user.email=t@example.com commit -qm test && git rev-list --count HEAD"), want: "1"},
	{name: "work_git_init_nested", args: sh("mkdir {work}/sub && cd {work}/sub && git init -q && echo x >f && git add f && " +
		"git -c user.name=t -c user.email=t@example.com commit -qm test && git rev-list --count HEAD"), want: "1"},
	// The sandbox HOME persists between runs, and is not the real HOME.
	{name: "work_home_persists", before: sh("echo kept >$HOME/.stockade-escape-persist"),
		args: probe("read", "{home}/.stockade-escape-persist"), want: "OK", check: persisted},
	{name: "work_home_writable", args: probe("create", "{home}/.cache-test"), want: "OK"},
	// The loosening flags do what they say, and only that.
	{name: "work_env_flag_passes_token", flags: []string{"--env", "GITHUB_TOKEN"},
		args: probe("getenv", "GITHUB_TOKEN"), want: "OK ghp_escape_test"},
	{name: "work_env_flag_sets_value", flags: []string{"--env", "MY_API_KEY=given"},
		args: probe("getenv", "MY_API_KEY"), want: "OK given"},
	{name: "work_env_flag_only_named", flags: []string{"--env", "GITHUB_TOKEN"},
		args: probe("env-scan"), want: "OK GITHUB_TOKEN"},
	{name: "work_unmask_dotenv", flags: []string{"--unmask", ".env"}, args: probe("read", "{work}/.env"), want: "OK"},
	{name: "work_allow_hooks", flags: []string{"--allow-hooks"}, mutates: true,
		args: probe("write", "{work}/.git/hooks/pre-commit"), want: "OK"},
	{name: "work_rw_flag", flags: []string{"--rw", "{spare}"}, mutates: true,
		args: probe("write", "{spare}/data.txt"), want: "OK"},
	{name: "work_ro_flag_readable", flags: []string{"--ro", "{other}"}, args: probe("read", "{other}/secret.txt"), want: "OK"},
}

// persisted checks that the first run's file landed in the sandbox HOME's backing
// directory and not in the real HOME.
func persisted(fx *fixture) error {
	name := ".stockade-escape-persist"
	if _, err := os.Lstat(filepath.Join(fx.home, name)); err == nil {
		return fmt.Errorf("%s was written to the real HOME", name)
	}
	line, err := firstLine(filepath.Join(fx.sandboxHm, name))
	if err != nil || line != "kept" {
		return fmt.Errorf("sandbox HOME %s: got %q, %v", fx.sandboxHm, line, err)
	}
	return nil
}
