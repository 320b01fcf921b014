package escape

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// containerRows: containers the agent starts through the engine of
// --containers (package engine) are held by the sandbox's walls and by the
// OCI hooks' policy (package ocihook). The engine sees the sandbox's view,
// never the host's; every mount it inherits is locked, so masks and
// read-only binds hold in a container whatever its options; its namespaces
// are the sandbox's or its own. The createRuntime hook refuses what the
// policy does not allow, and the agent sees the refusal, naming the check,
// as the engine's error (refusedBy). Each row imports a busybox image,
// with the probe in it, through the engine first (no registry is reachable
// here).
var containerRows = []row{
	// The sanity rows: both clients work, so the denials below are real.
	ctrRow("containers_docker_run_works", `docker run --rm img echo hi`, "hi"),
	ctrRow("containers_podman_run_works", `podman --remote run --rm img echo hi`, "hi"),
	// The host's root and the real HOME: the engine's / is the sandbox's
	// view, and the hook refuses a bind from outside the workdir anyway.
	ctrRow("containers_bind_root", refusedBy(`docker run -d -v /:/host img true`), "stockade refused the container (check mounts)"),
	ctrRow("containers_bind_home", refusedBy(`podman --remote run --rm -v $HOME:/h img true`), "stockade refused the container (check mounts)"),
	ctrRow("containers_bind_proc", refusedBy(`podman --remote run --rm -v /proc:/p img true`), "stockade refused the container (check mounts)"),
	// --privileged and --cap-add ALL: capabilities beyond the defaults,
	// which the engine alone would give.
	ctrRow("containers_privileged", refusedBy(`podman --remote run --rm --privileged img true`), "stockade refused the container (check capabilities)"),
	ctrRow("containers_privileged_docker", refusedBy(`docker run -d --privileged img true`), "stockade refused the container (check capabilities)"),
	ctrRow("containers_cap_add_all", refusedBy(`podman --remote run --rm --cap-add ALL img true`), "stockade refused the container (check capabilities)"),
	// Every capability and no seccomp, then at the protected paths: refused
	// before it runs (beneath the hook, the locked mounts hold too: see
	// containers_write_protected).
	ctrRow("containers_capall_git_hooks",
		refusedBy(`docker run -d --cap-add ALL --security-opt seccomp=unconfined -v {work}:/w img sh -c 'mount -o remount,rw /w/.git/hooks; echo x >>/w/.git/hooks/pre-commit'`),
		"stockade refused the container (check capabilities)"),
	ctrRow("containers_capall_env_mask",
		refusedBy(`docker run -d --cap-add ALL --security-opt seccomp=unconfined -v {work}:/w img sh -c 'umount /w/.env; cat /w/.env'`),
		"stockade refused the container (check capabilities)"),
	ctrRow("containers_seccomp_unconfined", refusedBy(`podman --remote run --rm --security-opt seccomp=unconfined img true`), "stockade refused the container (check seccomp)"),
	// Security options that would weaken a container the engine alone
	// starts: no SELinux label or AppArmor profile (stockade relies on
	// neither), no masked paths (podman's unmask=ALL, docker's
	// systempaths=unconfined), /proc without hidepid, an allow-all seccomp
	// profile of the client's, no no_new_privs. precreate puts back what
	// the policy sets (the masks, hidepid=2, no_new_privs, the canonical
	// profile in place of the client's) and the container runs as
	// confined as without the option (ctrConfined). Without precreate's
	// masks and hidepid, every row prints KALLSYMS NO_HIDEPID (unmask=ALL
	// TIMER_LIST too); no_new_privs and seccomp are held by seal as well.
	ctrRow("containers_label_disable", `podman --remote run --rm --security-opt label=disable -v {work}:/w img sh -c '`+ctrConfined+`'`, "CONFINED"),
	ctrRow("containers_label_disable_docker", `docker run --rm --security-opt label=disable -v {work}:/w img sh -c '`+ctrConfined+`'`, "CONFINED"),
	ctrRow("containers_apparmor_unconfined", `docker run --rm --security-opt apparmor=unconfined -v {work}:/w img sh -c '`+ctrConfined+`'`, "CONFINED"),
	ctrRow("containers_unmask_all", `podman --remote run --rm --security-opt unmask=ALL -v {work}:/w img sh -c '`+ctrConfined+`'`, "CONFINED"),
	ctrRow("containers_systempaths_unconfined", `docker run --rm --security-opt systempaths=unconfined -v {work}:/w img sh -c '`+ctrConfined+`'`, "CONFINED"),
	ctrRow("containers_proc_opts", `podman --remote run --rm --security-opt proc-opts=hidepid=0 -v {work}:/w img sh -c '`+ctrConfined+`'`, "CONFINED"),
	ctrRow("containers_no_new_privileges_false", `docker run --rm --security-opt no-new-privileges=false -v {work}:/w img sh -c '`+ctrConfined+`'`, "CONFINED"),
	ctrRow("containers_seccomp_profile_file",
		`printf '{"defaultAction":"SCMP_ACT_ALLOW"}' >/tmp/allow.json && podman --remote run --rm --security-opt seccomp=/tmp/allow.json -v {work}:/w img sh -c '`+ctrConfined+`'`,
		"CONFINED"),
	// A container's root is the engine's root, which is host uid 0 when
	// the supervisor is root: it held CAP_CHOWN over the host's device
	// nodes the runtime binds into every container, and chowned the
	// host's /dev/null. The sandbox's device binds are read-only, and the
	// engine cannot make them writable (the flag is locked in its
	// namespace). The row puts owner and mode back if the change went
	// through.
	ctrRow("containers_host_device_chown",
		`b=$(stat -c '%u:%a' /dev/null /dev/zero); podman --remote run --rm img sh -c 'chown 1000 /dev/null; chmod 600 /dev/zero' >/dev/null 2>&1; a=$(stat -c '%u:%a' /dev/null /dev/zero); `+
			`podman --remote run --rm img sh -c 'chown 0 /dev/null; chmod 666 /dev/zero' >/dev/null 2>&1; [ "$a" = "$b" ] && echo UNCHANGED || echo CHANGED $a`,
		"UNCHANGED"),
	// The same through buildah, which chowns a RUN --mount bind's source
	// for its U option itself, before any check, following a link in the
	// context (to the engine's /dev/null: the host's).
	ctrRow("containers_build_mount_chown_device",
		`c=$(mktemp -d); ln -s / $c/rootlink; printf 'FROM localhost/img\nUSER 1000:1000\nRUN --mount=type=bind,source=rootlink/dev/null,target=/h,U true\n' >$c/Containerfile && `+
			`b=$(stat -c %u /dev/null); podman --remote build --no-cache $c >/dev/null 2>&1; a=$(stat -c %u /dev/null); podman --remote run --rm img chown 0 /dev/null >/dev/null 2>&1; [ "$a" = "$b" ] && echo UNCHANGED || echo CHANGED $a`,
		"UNCHANGED"),
	// A container may set setuid bits (dpkg does), on a file of the
	// workdir it binds too: on the host's mount that file runs as its
	// owner, the user or root, for whoever runs it. The session's end
	// removes the bits from what changed during the run (REMOVED lines);
	// the next session sees the modes.
	{name: "containers_setuid_left_in_workdir", flags: []string{"--containers"}, timeout: time.Minute,
		before: sh(ctrImage + `podman --remote run --rm -v {work}:/w img sh -c 'touch /w/suid-left && chmod 4755 /w/suid-left && mkdir -p /w/d && touch /w/d/sgid-left && chmod 2755 /w/d/sgid-left'`),
		args:   sh(`echo $(stat -c %a {work}/suid-left {work}/d/sgid-left)`), want: "755 755"},
	// The command hands a container a descriptor of a file the container
	// does not bind (in the sandbox HOME, a --rw tree), over a socket in
	// the workdir, and the container makes it setuid through it: the
	// session's end sweeps every tree the sandbox writes, not the
	// workdir alone.
	// A directory the sweep cannot read (a container gives it to another
	// id, mode 0700) ended the walk: what came after it stayed setuid.
	// (The next start refuses the unlistable directory for the user; the
	// host check looks at the files.)
	{name: "containers_setuid_sweep_goes_on", flags: []string{"--containers"}, timeout: time.Minute,
		before: sh(ctrImage + `podman --remote run --rm -v {work}:/w img sh -c 'for i in 1 2 3 4 5 6 7 8 9 10 11 12; do touch /w/r$i; chmod 4755 /w/r$i; done; mkdir -m 0700 /w/locked; chown 1:1 /w/locked'`),
		args:   sh(`stat -c %a {work}/r* | sort -u`), want: "755", refusedUser: "cannot list", refusedLate: true,
		check: func(fx *fixture) error {
			files, _ := filepath.Glob(filepath.Join(fx.work, "r*"))
			for _, f := range files {
				if fi, err := os.Lstat(f); err != nil || fi.Mode()&(os.ModeSetuid|os.ModeSetgid) != 0 {
					return fmt.Errorf("%s: %v %v after the session", f, fi.Mode(), err)
				}
			}
			if len(files) != 12 {
				return fmt.Errorf("%d files r*, want 12", len(files))
			}
			return nil
		}},
	{name: "containers_setuid_by_fd_in_home", flags: []string{"--containers"}, timeout: time.Minute,
		before: sh(ctrImage + `: >$HOME/planted; chmod 755 $HOME/planted; {probe} send-fd {work}/fd.sock $HOME/planted >/dev/null & ` +
			`podman --remote run --rm -v {work}:/w img probe recv-chmod /w/fd.sock; wait; rm -f {work}/fd.sock`),
		args: sh(`stat -c %a $HOME/planted`), want: "755"},
	{name: "containers_setuid_by_fd_in_rw_tree", flags: []string{"--containers", "--rw", "{spare}"}, timeout: time.Minute,
		before: sh(ctrImage + `: >{spare}/planted; chmod 755 {spare}/planted; {probe} send-fd {work}/fd.sock {spare}/planted >/dev/null & ` +
			`podman --remote run --rm -v {work}:/w img probe recv-chmod /w/fd.sock; wait; rm -f {work}/fd.sock`),
		args: sh(`stat -c %a {spare}/planted`), want: "755"},
	{name: "containers_setuid_by_fd_in_rw_file", flags: []string{"--containers", "--rw", "{spare}/data.txt"}, timeout: time.Minute,
		before: sh(ctrImage + `{probe} send-fd {work}/fd.sock {spare}/data.txt >/dev/null & ` +
			`podman --remote run --rm -v {work}:/w img probe recv-chmod /w/fd.sock; wait; rm -f {work}/fd.sock`),
		args: sh(`stat -c %a {spare}/data.txt`), want: "755"},
	// The engine's processes share the sandbox's PID namespace; /proc
	// hides them (hidepid). As invisible it exempted gid 0, which root's
	// sandbox is in: podman's command line, descriptors and mounts (the
	// storage's host path) were listed.
	ctrRow("containers_engine_processes_hidden",
		`podman --remote run --rm img true >/dev/null 2>&1; echo $(cat /proc/[0-9]*/comm 2>/dev/null | grep -c -E '^(podman|conmon|slirp4netns|stockade-engin|crun)')`, "0"),
	// A volume's mount options: podman mounts what they name on its side,
	// before any hook. mount.fuse3 ran the program before the device's #
	// as the engine's root with every capability of its namespace; RAN
	// without the filter's refusal.
	ctrRow("containers_volume_fuse_helper",
		`printf '#!/bin/sh\ntouch {work}/fuse-helper-ran\nexit 1\n' >{work}/payload; chmod 755 {work}/payload; `+
			`a=$(podman --remote volume create --opt type=fuse --opt device={work}/payload#x v1 2>&1 | `+apiRefusal+`); `+
			`b=$(curl -s --unix-socket /run/stockade/engine.sock -X POST -H 'Content-Type: application/json' -d '{"Name":"v2","DriverOpts":{"type":"fuse","device":"{work}/payload#x"}}' http://d/v1.41/volumes/create | `+apiRefusal+`); `+
			`podman --remote run --rm -v v1:/m img true >/dev/null 2>&1; docker run --rm -v v2:/m img true >/dev/null 2>&1; `+
			`test -e {work}/fuse-helper-ran && echo "$a $b RAN" || echo "$a $b NOT_RAN"`,
		"stockade refused the request (volume) stockade refused the request (volume) NOT_RAN"),
	// conmon writes a container's log at the path the client names, on
	// the engine's side (a root supervisor's engine set the host's
	// kernel.core_pattern so), and its pid file.
	ctrRow("containers_log_path",
		`a=$(podman --remote run --rm --log-driver k8s-file --log-opt path={work}/conmon-log img echo hi 2>&1 | `+apiRefusal+`); `+
			`b=$(docker run --rm --log-driver k8s-file --log-opt path={work}/conmon-log2 img echo hi 2>&1 | `+apiRefusal+`); `+
			`c=$(podman --remote run --rm --conmon-pidfile {work}/conmon-pid img true 2>&1 | `+apiRefusal+`); `+
			`ls {work}/conmon-log {work}/conmon-log2 {work}/conmon-pid >/dev/null 2>&1 && w=WRITTEN || w=NOT_WRITTEN; echo "$a $b $c $w"`,
		"stockade refused the request (log) stockade refused the request (log) stockade refused the request (log) NOT_WRITTEN"),
	ctrRow("containers_kube_play",
		`printf 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: c\n    image: localhost/img\n    command: ["true"]\n' >{work}/pod.yaml; `+
			`podman --remote kube play {work}/pod.yaml 2>&1 | `+apiRefusal,
		"stockade refused the request (kube)"),
	// A container gives a directory another id with mode 0711: the user
	// cannot list it, but the user's git reaches a repository below it by
	// name, whose core.fsmonitor ran at git status. The git check took
	// such a directory for another user's (a database volume) and said
	// nothing; it is NOT CHECKED now. (For root, who lists it, the nested
	// repository is quarantined.)
	{name: "containers_git_searchable_other_dir", flags: []string{"--containers"}, timeout: time.Minute, needsRoot: true,
		before:        sh(ctrImage + `podman --remote run --rm -v {work}:/w img sh -c 'mkdir -p /w/hide/r/.git/objects /w/hide/r/.git/refs/heads && echo "ref: refs/heads/main" >/w/hide/r/.git/HEAD && printf "[core]\n\tfsmonitor = true\n" >/w/hide/r/.git/config && chown 1000:1000 /w/hide && chmod 711 /w/hide'`),
		beforeReports: "QUARANTINED: {work}/hide/r/.git/config", beforeReportsUser: "NOT CHECKED: {work}/hide:",
		args: sh(`test -e {work}/hide/r/.git/config && echo PRESENT || echo GONE`), want: "GONE",
		refusedUser: "cannot list", refusedLate: true},
	// (crun writes a sysctl through the engine's /proc before the hook
	// runs, and only its net tree is writable there: crun's refusal comes
	// first, the hook's is behind it.)
	ctrRow("containers_sysctl_kernel",
		`podman --remote run --rm --sysctl kernel.shm_rmid_forced=1 img true 2>&1 | grep -oE 'stockade refused the container \(check sysctl\)|/proc/sys/kernel/shm_rmid_forced: Read-only file system' | head -n 1`,
		"/proc/sys/kernel/shm_rmid_forced: Read-only file system"),
	// A named volume whose driver options bind another directory of the
	// engine's (here its storage, where its records and every image's
	// layers are): the engine mounts it at the volume's directory, which
	// the hook would otherwise take for a volume like any other.
	ctrRow("containers_volume_driver_opts",
		`podman --remote volume create --opt type=none --opt o=bind --opt device=/stockade-engine/storage w 2>&1 | `+apiRefusal,
		"stockade refused the request (volume)"),
	// A device: the engine, rootless (it runs slirp4netns for the
	// containers' network), binds the device node rather than asking the
	// runtime to make it, and a bind from outside the workdir is refused
	// (a device in the config is refused by the devices check: see
	// internal/ocihook TestCheck).
	ctrRow("containers_device", refusedBy(`podman --remote run --rm --device /dev/null:/dev/sda img true`), "stockade refused the container (check mounts)"),
	// A non-recursive bind of the workdir would leave the masks behind
	// (the kernel refuses to copy a tree with locked children but whole).
	ctrRow("containers_bind_nonrecursive_env",
		refusedBy(`podman --remote run --rm --mount type=bind,src={work},dst=/w,bind-nonrecursive img cat /w/.env`),
		"stockade refused the container (check mounts)"),
	// The host's PID namespace: the engine's "host" is the sandbox's, and
	// without cgroups podman refuses to share it at all.
	ctrRow("containers_pid_host",
		`docker run --rm --pid host img cat /proc/1/comm 2>&1 | grep -q 'private PID namespace' && echo REFUSED`, "REFUSED"),
	// The engine's network namespace, which has only its loopback: the
	// hook refuses a container without a network namespace of its own.
	ctrRow("containers_network_host", refusedBy(`docker run -d --network host img true`), "stockade refused the container (check namespaces)"),
	// --userns host would share the engine's user namespace, whose root
	// owns the engine's mounts: the container gets one of its own anyway,
	// mapping the engine's ids onto themselves (the engine's own map, seen
	// from inside, maps them onto other ids).
	ctrRow("containers_userns_host",
		`podman --remote run --rm --userns host img sh -c 's=PRIVATE; while read a b c; do [ "$a" = "$b" ] || s=SHARED; done </proc/self/uid_map; echo $s'`, "PRIVATE"),
	// The host's engine sockets are not in the view: a bind of their
	// paths is refused, and the sandbox has none either. The system
	// sockets (/run/docker.sock, /run/podman/podman.sock) are absent on a
	// test machine, so the fixture also listens, as the runner, at the
	// engine sockets of the real HOME (hostEngineSockets: Docker Desktop,
	// rootless docker), and the row's check makes sure they answered on
	// the host all along.
	withHostSockets(ctrRow("containers_host_docker_socket",
		refusedBy(`docker run -d -v /run/docker.sock:/d.sock -v /run/podman:/p -v {home}/.docker/desktop/docker.sock:/h.sock img true`), "stockade refused the container (check mounts)")),
	withHostSockets(ctrRow("containers_sandbox_host_socket",
		`s=DENIED; test -S /var/run/docker.sock && s=LEAKED; test -S /run/podman/podman.sock && s=LEAKED; `+
			`for p in `+strings.Join(hostEngineSockets, " ")+`; do {probe} connect-unix {home}/$p | grep -q "^OK" && s="LEAKED $p"; done; `+
			`DOCKER_HOST=unix://{home}/.docker/desktop/docker.sock docker version >/dev/null 2>&1 && s="LEAKED docker version"; echo $s`,
		"DENIED")),
	// The same sockets in a tree the sandbox sees (--ro of the real
	// ~/.docker, for its config), and a host engine's socket in the
	// workdir (dockerd -H unix://$PWD/tmp/docker.sock), which a container
	// binds with the workdir: the sandbox masks every socket of the trees
	// it sees with an empty file (mount: TestScanMasksSockets), and the
	// mask reaches the container locked. Fail (OK, LEAKED) without the
	// masking.
	withHostSockets(podRow("containers_sock_in_ro_tree", []string{"--ro", "{home}/.docker"},
		`{probe} connect-unix {home}/.docker/desktop/docker.sock`, "DENIED EACCES")),
	withHostSockets(ctrRow("containers_sock_in_workdir",
		`docker run --rm -v {work}:/w img /bin/probe connect-unix /w/tmp/docker.sock`, "DENIED ECONNREFUSED")),
	// The tun device the engine's slirp4netns needs is in the command's
	// view too: it makes no interface without CAP_NET_ADMIN over the
	// sandbox's network namespace, which the command has not.
	{name: "containers_tun_command", flags: []string{"--containers"}, args: probe("tun"), want: "DENIED EPERM"},
	// The containers' network: slirp4netns, with its sockets in the
	// sandbox's network namespace (only lo), so nothing but the pods'
	// proxies on 169.254.1.1 (sandboxnet.PodHost), which serve the pods'
	// policy (the agent's by default).
	ctrRow("containers_pod_direct",
		`docker run --rm img sh -c 'echo | nc -w 3 198.51.100.10 80 >/dev/null && echo LEAKED || echo DENIED' 2>/dev/null`, "DENIED"),
	ctrRow("containers_pod_not_allowed",
		`docker run --rm img sh -c 'wget -q -O /dev/null http://198.51.100.10/ 2>&1 | grep -q " 403 " && echo DENIED || echo LEAKED'`, "DENIED"),
	// The floor holds for the pods as for the agent, even under
	// --pod-policy allow: a private address, the metadata service.
	podRow("containers_pod_private", []string{"--pod-policy", "allow"},
		`docker run --rm img sh -c 'wget -q -O /dev/null http://10.0.0.5/ 2>&1 | grep -q " 403 " && echo DENIED || echo LEAKED'`, "DENIED"),
	podRow("containers_pod_metadata", []string{"--pod-policy", "allow"},
		`docker run --rm img sh -c 'wget -q -O /dev/null http://169.254.169.254/latest/meta-data/ 2>&1 | grep -q " 403 " && echo DENIED || echo LEAKED'`, "DENIED"),
	// A name the policy does not allow gets no answer, and no query leaves.
	ctrRow("containers_pod_dns",
		`docker run --rm img sh -c 'nslookup example.com 2>&1 | grep -q "can.t find" && echo DENIED || echo LEAKED'`, "DENIED"),
	// The agent's own proxies (on the sandbox's 127.0.0.1, its policy)
	// and the registry proxy are out of a container's reach: slirp4netns
	// runs without a way to the sandbox's loopback whatever the client
	// asks (allow_host_loopback=true is overridden by the engine's
	// slirp4netns wrapper), on the docker default network and on
	// slirp4netns alike.
	ctrRow("containers_pod_agent_proxy",
		`podman --remote run --rm --network slirp4netns:allow_host_loopback=true img sh -c 'echo | nc -w 3 10.0.2.2 3128 >/dev/null && echo LEAKED || echo DENIED' 2>/dev/null`, "DENIED"),
	ctrRow("containers_pod_agent_proxy_bridge",
		`docker run --rm img sh -c 'echo | nc -w 3 10.0.2.2 3128 >/dev/null && echo LEAKED || echo DENIED' 2>/dev/null`, "DENIED"),
	ctrRow("containers_pod_registry_proxy",
		`docker run --rm img sh -c 'echo | nc -w 3 169.254.1.1 3130 >/dev/null && echo LEAKED || echo DENIED' 2>/dev/null`, "DENIED"),
	// The auth proxy (on the sandbox's 127.0.0.1:2376; with --gh it holds
	// the fixture's real GITHUB_TOKEN) is out of a container's reach: at
	// the slirp gateway 10.0.2.2 (even asked for with
	// allow_host_loopback=true), at the pods' address or the bridge's
	// gateway, and through the pods' HTTP and SOCKS5 proxies (the floor
	// refuses loopback). No process a container sees holds the real key,
	// in its environment or arguments. The sandbox itself reaches the
	// proxy (PROXY-UP), so the denials are real. Fails (REACHED
	// 10.0.2.2:2376) when the engine's slirp4netns wrapper passes the
	// client's allow_host_loopback through.
	podRow("containers_auth_proxy", []string{"--gh"},
		`up=NO-PROXY; printf 'GET /github/ HTTP/1.0\r\nAuthorization: token sk-proxy\r\n\r\n' | /bin/busybox nc -w 3 127.0.0.1 2376 | grep -q '^HTTP/1' && up=PROXY-UP; `+
			`a=$(docker run --rm img sh -c '`+ctrAuthProxy+`'); `+
			`b=$(podman --remote run --rm --network slirp4netns:allow_host_loopback=true img sh -c '`+ctrAuthProxy+`'); echo "$up $a $b"`,
		"PROXY-UP DENIED KEY-ABSENT DENIED KEY-ABSENT"),
	// gh's socket, the auth proxy's other door, cannot be bound in.
	podRow("containers_gh_socket", []string{"--gh"},
		refusedBy(`docker run -d -v /run/stockade/gh:/g img true`), "stockade refused the container (check mounts)"),
	// The registry proxy, on the sandbox's 127.0.0.1:3130, is the engine's:
	// the command naming it itself, for a registry the engine may pull
	// from, is refused (the proxy answers only connections the engine's
	// process holds). Fails (REACHED: the proxy tried the registry) when
	// the proxy serves whoever connects.
	podRow("containers_registry_proxy_command", []string{"--registry-allow", "http://registry.invalid:5000"},
		`a=$(curl -s -x http://127.0.0.1:3130 http://registry.invalid:5000/v2/); `+
			`b=$(curl -s -p -x http://127.0.0.1:3130 http://registry.invalid:5000/v2/ -w '%{http_connect}'); `+
			`case "$a $b" in *"serves its pulls only"*403*) echo REFUSED;; *) echo "REACHED $a $b";; esac`, "REFUSED"),
	// The sandbox's capture listener (no capture rules with an engine) is
	// on loopback only: not reachable through the pods' address.
	ctrRow("containers_pod_capture_listener",
		`docker run --rm img sh -c 'echo | nc -w 3 169.254.1.1 3129 >/dev/null && echo LEAKED || echo DENIED' 2>/dev/null`, "DENIED"),
	// A container writing the workdir's protected paths through a bind the
	// hooks allow: the sandbox's read-only binds reach the engine locked,
	// and Landlock in the container would let the write through.
	ctrRow("containers_write_protected",
		`podman --remote run --rm -v {work}:/w img /bin/probe write /w/.git/config`, "DENIED EROFS"),
	ctrRow("containers_bind_git_hooks_rw",
		`podman --remote run --rm -v {work}/.git/hooks:/h:rw img /bin/probe write /h/pre-commit`, "DENIED EROFS"),
	// podman exec passes no hook: the engine's runtime, stockade in front
	// of crun, refuses a process with more than the default capabilities,
	// which the engine alone would give (every one, in the container's
	// user namespace), and seals the rest as the entrypoint is sealed.
	ctrRow("containers_exec_privileged",
		`podman --remote run -d --name c img sleep 60 >/dev/null && `+refusedBy(`podman --remote exec -d --privileged c true`),
		"stockade refused the container (check capabilities)"),
	ctrRow("containers_exec_privileged_docker",
		`docker run -d --name c img sleep 60 >/dev/null && `+refusedBy(`docker exec -d --privileged c true`),
		"stockade refused the container (check capabilities)"),
	// A build's RUN step passes no hook either: what podman build asks for
	// beyond the defaults is refused by the runtime.
	ctrRow("containers_build_cap_add_all",
		`c=$(mktemp -d); printf 'FROM localhost/img\nRUN true\n' >$c/Containerfile && `+refusedBy(`podman --remote build --no-cache --cap-add ALL --network none $c`),
		"stockade refused the container (check capabilities)"),
	ctrRow("containers_build_seccomp_unconfined",
		`c=$(mktemp -d); printf 'FROM localhost/img\nRUN true\n' >$c/Containerfile && `+refusedBy(`podman --remote build --no-cache --security-opt seccomp=unconfined --network none $c`),
		"stockade refused the container (check seccomp)"),
	// A build step with no network namespace of its own (podman build
	// --network host; every step of a Docker API build, whatever its
	// networkmode) would run in the engine's, the sandbox's, where the
	// agent's proxies and the auth proxy listen: the runtime gives it a new,
	// empty one. Without that, both print REACHED (127.0.0.1:3128).
	ctrRow("containers_build_network_host",
		`c=$(mktemp -d); printf 'FROM localhost/img\nRUN echo | nc -w 3 127.0.0.1 3128 >/dev/null && echo REACHED || echo UNREACHED\n' >$c/Containerfile && `+
			`a=$(podman --remote build --no-cache --network host $c 2>&1 | grep -oE '^(REACHED|UNREACHED)$|stockade refused the container \(check [a-z_]*\)' | head -n 1); `+
			`b=$(docker build --no-cache -f $c/Containerfile $c 2>&1 | grep -oE '^(REACHED|UNREACHED)$|stockade refused the container \(check [a-z_]*\)' | head -n 1); echo "$a $b"`,
		"UNREACHED UNREACHED"),
	// One that joins a network namespace by path is refused.
	ctrRow("containers_build_network_ns_path",
		`c=$(mktemp -d); printf 'FROM localhost/img\nRUN true\n' >$c/Containerfile && `+refusedBy(`podman --remote build --no-cache --network ns:/proc/self/ns/net $c`),
		"stockade refused the container (check namespaces)"),
	// A build with isolation chroot: buildah runs the RUN step itself, not
	// through the engine's runtime, so none of the build checks apply (it
	// is in the engine's network namespace, the sandbox's, whatever the
	// network). The filter in front of the engine's API refuses the
	// parameter, however it is spelled or reached: podman's flag, the
	// BUILDAH_ISOLATION its client reads, the libpod API's number or a
	// case-folded name. Without the filter each prints REACHED.
	ctrRow("containers_build_isolation_chroot",
		`c=$(mktemp -d); printf 'FROM localhost/img\nRUN echo | nc -w 3 127.0.0.1 3128 >/dev/null && echo REACHED || echo UNREACHED\n' >$c/Containerfile && `+
			`a=$(podman --remote build --no-cache --isolation chroot --network host $c 2>&1 | `+apiRefusal+`); `+
			`b=$(BUILDAH_ISOLATION=chroot podman --remote build --no-cache --network host $c 2>&1 | `+apiRefusal+`); echo "$a $b"`,
		"stockade refused the request (isolation) stockade refused the request (isolation)"),
	ctrRow("containers_build_isolation_api",
		`c=$(mktemp -d); printf 'FROM localhost/img\nRUN echo | nc -w 3 127.0.0.1 3128 >/dev/null && echo REACHED || echo UNREACHED\n' >$c/Containerfile && `+
			`for q in isolation=2 ISOLATION=chroot i%C5%BFolation=chroot 'isolation=oci&isolation=chroot'; do `+
			`tar -C $c -cf - . | curl -s --unix-socket /run/stockade/engine.sock -X POST -H 'Content-Type: application/x-tar' --data-binary @- "http://d/v4.0.0/libpod/build?networkmode=host&$q" | `+apiRefusal+`; done | sort | uniq -c | tr -s ' '`,
		"4 stockade refused the request (isolation)"),
	// Annotations crun acts on before any hook runs, past the config's
	// checks: a seccomp filter of the client's in place of the config's
	// (this one refuses every system call: without the check the
	// container dies at its first), and a file crun creates for the
	// hooks' output, at a path the client names.
	ctrRow("containers_annotation_seccomp_bpf",
		refusedBy(`podman --remote run --rm --annotation run.oci.seccomp_bpf_data=BgAAAAEABQA= img true`),
		"stockade refused the container (check annotations)"),
	ctrRow("containers_annotation_hooks_stdout",
		`a=$(`+refusedBy(`podman --remote run --rm --annotation run.oci.hooks.stdout=$HOME/planted img true`)+`); `+
			`test -e $HOME/planted && echo "$a CREATED" || echo "$a ABSENT"`,
		"stockade refused the container (check annotations) ABSENT"),
	// kube play builds an image it lacks from <podman's working
	// directory>/<image name>/Containerfile, always with chroot
	// isolation, so its RUN steps pass no check: with podman working in
	// the sandbox's /, localhost/tmp was built from the command's
	// /tmp/Containerfile (REACHED without the fix). Podman works in an
	// empty directory the engine cannot write.
	ctrRow("containers_kube_play_build",
		`printf 'FROM localhost/img\nRUN (echo | nc -w 3 127.0.0.1 3128 >/dev/null && echo REACHED || echo UNREACHED) >/result\n' >/tmp/Containerfile; `+
			`printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: kp}\nspec:\n  containers:\n  - {name: c, image: "localhost/tmp:latest", command: ["cat", "/result"]}\n' >/tmp/kube.yaml; `+
			`podman --remote kube play /tmp/kube.yaml >/dev/null 2>&1; podman --remote run --rm localhost/tmp:latest cat /result 2>/dev/null || echo NOT_BUILT`,
		"NOT_BUILT"),
	// Podman features that run or read what the client names on the
	// engine's side, outside any container, where none of the checks
	// apply (a reviewer's shell driver ran as the engine's root with every
	// capability of its namespace, in the sandbox's PID namespace).
	ctrRow("containers_secret_shell_driver",
		`a=$(echo data | podman --remote secret create --driver shell --driver-opts store='touch /tmp/shell-ran',lookup=true,delete=true,list=true s1 - 2>&1 | `+apiRefusal+`); `+
			`b=$(curl -s --unix-socket /run/stockade/engine.sock -X POST -H 'Content-Type: application/json' -d '{"Name":"s2","Data":"ZGF0YQ==","Driver":{"Name":"shell"}}' http://d/v1.41/secrets/create | `+apiRefusal+`); `+
			`test -e /tmp/shell-ran && echo "$a $b RAN" || echo "$a $b NOT_RAN"`,
		"stockade refused the request (secret) stockade refused the request (secret) NOT_RAN"),
	ctrRow("containers_build_context_engine_root",
		`c=$(mktemp -d); printf 'FROM localhost/img\nRUN --mount=type=bind,from=eng,source=/,target=/e sh -c "test -e /e/stockade-engine && echo LEAKED || echo CONTAINED"\n' >$c/Containerfile && `+
			`tar -C $c -cf - . | curl -s --unix-socket /run/stockade/engine.sock -X POST -H 'Content-Type: application/x-tar' --data-binary @- `+
			`'http://d/v4.0.0/libpod/build?nocache=1&additionalbuildcontexts=%7B%22eng%22%3A%7B%22IsURL%22%3Afalse%2C%22IsImage%22%3Afalse%2C%22Value%22%3A%22%2F%22%7D%7D' | `+
			`grep -oE 'stockade refused the request \([a-z_]*\)|LEAKED|CONTAINED' | head -n 1`,
		"stockade refused the request (build)"),
	ctrRow("containers_build_cppflags",
		`c=$(mktemp -d); printf 'FROM localhost/img\nRUN true\n' >$c/Containerfile.in && `+
			`tar -C $c -cf - . | curl -s --unix-socket /run/stockade/engine.sock -X POST -H 'Content-Type: application/x-tar' --data-binary @- `+
			`'http://d/v4.0.0/libpod/build?dockerfile=Containerfile.in&cppflags=%5B%22-fplugin%3D%2Ftmp%2Fnone.so%22%5D' | `+apiRefusal,
		"stockade refused the request (build)"),
	// buildah follows a symbolic link in a RUN --mount bind's source
	// (CVE-2024-1753): a link to / in the context, or in an earlier
	// stage, bound the engine's root (podman's own socket, the kept
	// storage) into the step. LEAKED without the runtime's mount check.
	ctrRow("containers_build_mount_symlink_context",
		`c=$(mktemp -d); ln -s / $c/rootlink; printf 'FROM localhost/img\nRUN --mount=type=bind,source=rootlink,target=/h sh -c "test -e /h/stockade-engine && echo LEAKED || echo CONTAINED"\n' >$c/Containerfile && `+
			`podman --remote build --no-cache $c 2>&1 | grep -oE 'stockade refused the container \(check [a-z_]*\)|^(LEAKED|CONTAINED)$' | head -n 1`,
		"stockade refused the container (check mounts)"),
	ctrRow("containers_build_mount_symlink_stage",
		`c=$(mktemp -d); printf 'FROM localhost/img AS s\nRUN ln -s / /rootlink\nFROM localhost/img\nRUN --mount=type=bind,from=s,source=/rootlink,target=/h sh -c "test -e /h/stockade-engine && echo LEAKED || echo CONTAINED"\n' >$c/Containerfile && `+
			`podman --remote build --no-cache $c 2>&1 | grep -oE 'stockade refused the container \(check [a-z_]*\)|^(LEAKED|CONTAINED)$' | head -n 1`,
		"stockade refused the container (check mounts)"),
	// Build parameters that name a path on the engine's side: a build
	// secret with no source (its id is read as a path), one from outside
	// the context, a local path as the remote context.
	ctrRow("containers_build_engine_paths",
		`c=$(mktemp -d); printf 'FROM localhost/img\nRUN --mount=type=secret,id=/stockade-engine/facts.json,target=/s cat /s\n' >$c/Containerfile && `+
			`for q in 'secrets=%5B%22id%3D%2Fstockade-engine%2Ffacts.json%22%5D' 'secrets=%5B%22id%3Ds%2Csrc%3D..%2F..%2F..%2Ftmp%22%5D' 'remote=%2Fstockade-engine'; do `+
			`tar -C $c -cf - . | curl -s --unix-socket /run/stockade/engine.sock -X POST -H 'Content-Type: application/x-tar' --data-binary @- "http://d/v4.0.0/libpod/build?nocache=1&$q" | `+
			`grep -oE 'stockade refused the request \([a-z_]*\)|workdir' | head -n 1; done | sort | uniq -c | tr -s ' '`,
		"3 stockade refused the request (build)"),
	// crun makes a container's binds before the createRuntime hook runs:
	// a source the command swaps between a directory and a link to /
	// (renameat2 RENAME_EXCHANGE) was mounted as the engine's root and
	// judged as the directory (a reviewer's fifth attempt won, podman's
	// own socket in the container). The hook compares what the runtime
	// mounted with what it checked. LEAKED without it, within a few
	// dozen attempts.
	ctrRow("containers_bind_source_swap",
		`mkdir sw; ln -s / swalt; nr=316; [ "$(uname -m)" = aarch64 ] && nr=276; `+
			`python3 -c "import ctypes
l=ctypes.CDLL(None)
while 1: l.syscall($nr,-100,b'sw',-100,b'swalt',2)" & f=$!; `+
			`r=CONTAINED; for i in $(seq 40); do o=$(podman --remote run --rm -v $PWD/sw:/h img sh -c 'test -e /h/stockade-engine && echo LEAKED' 2>/dev/null); [ "$o" = LEAKED ] && { r=LEAKED; break; }; done; kill $f; echo $r`,
		"CONTAINED"),
	// The runtime resolves a destination inside the container's root,
	// through links, those in a directory an earlier bind brought in:
	// -v $PWD:/w -v $PWD/sw:/w/sw with sw swapped for a link to
	// /stockade-engine bound the engine's directory at the root's
	// /stockade-engine while the literal /w/sw held the first bind's own
	// directory, as checked. The hook accounts for every mount below the
	// root. LEAKED without it.
	ctrRow("containers_bind_dest_swap",
		`d=$(mktemp -d); mkdir -p $d/bin $d/stockade-engine; cp /bin/busybox $d/bin/; for a in sh test echo; do ln -s busybox $d/bin/$a; done; tar -C $d -cf $d.tar .; podman --remote import -q $d.tar img3 >/dev/null; `+
			`mkdir sw; ln -s /stockade-engine swalt; nr=316; [ "$(uname -m)" = aarch64 ] && nr=276; `+
			`python3 -c "import ctypes
l=ctypes.CDLL(None)
while 1: l.syscall($nr,-100,b'sw',-100,b'swalt',2)" & f=$!; `+
			`r=CONTAINED; for i in $(seq 60); do o=$(podman --remote run --rm -v $PWD:/w -v $PWD/sw:/w/sw img3 sh -c 'test -e /stockade-engine/podman.sock -o -e /stockade-engine/facts.json && echo LEAKED' 2>/dev/null); [ "$o" = LEAKED ] && { r=LEAKED; break; }; done; kill $f; echo $r`,
		"CONTAINED"),
	// A build step that binds an image's own layer read-write, through a
	// link in the context, changes the image under its digest, for every
	// later container and session (--require-digest trusts the digest).
	ctrRow("containers_build_layer_rw",
		`L=$(podman --remote image inspect localhost/img --format '{{index .RootFS.Layers 0}}' | sed s/sha256://); c=$(mktemp -d); ln -s /stockade-engine/storage/vfs/dir/$L $c/lay; `+
			`printf 'FROM localhost/img\nRUN --mount=type=bind,source=lay,target=/m,rw sh -c "echo TAMPERED > /m/PWNED"\n' >$c/Containerfile; `+
			`a=$(`+refusedBy(`podman --remote build --no-cache $c`)+`); b=$(podman --remote run --rm img cat /PWNED 2>/dev/null || echo INTACT); echo "$a $b"`,
		"stockade refused the container (check mounts) INTACT"),
	// podman copies for a container that does not run on the engine's
	// side, through a bind's source as given: a container only created
	// with -v /:/host passed no hook, and cp wrote the kept storage
	// (PLANTED without the filter's refusal). A container without mounts
	// still takes a copy.
	ctrRow("containers_cp_created_bind",
		`podman --remote create --name cpx -v /:/host img true >/dev/null; echo X >f; `+
			`podman --remote cp f cpx:/host/tmp/cp-planted >/dev/null 2>&1 && a=PODMAN-COPIED || a=PODMAN-FAILED; docker cp f cpx:/host/tmp/cp-planted2 >/dev/null 2>&1 && b=DOCKER-COPIED || b=DOCKER-FAILED; `+
			`podman --remote create --name cpy img true >/dev/null; podman --remote cp f cpy:/f && c=COPIED; `+
			`test -e /tmp/cp-planted -o -e /tmp/cp-planted2 && echo "$a $b $c PLANTED" || echo "$a $b $c ABSENT"`,
		"PODMAN-FAILED DOCKER-FAILED COPIED ABSENT"),
	// A restore imports a container's whole configuration, its runtime
	// among it, from an archive the client sends.
	ctrRow("containers_restore_import",
		`for n in x 'x%2Fy'; do curl -s --unix-socket /run/stockade/engine.sock -X POST -H 'Content-Type: application/x-tar' --data-binary @/dev/null "http://d/v4.0.0/libpod/containers/$n/restore?import=1" | `+apiRefusal+`; done | sort | uniq -c | tr -s ' '`,
		"2 stockade refused the request (checkpoint)"),
	// A build step in the engine's PID namespace, the sandbox's, would see
	// and signal the command's processes and, as root, the launcher's.
	ctrRow("containers_build_pid_host",
		`c=$(mktemp -d); printf 'FROM localhost/img\nRUN kill -0 1 && echo SIGNALLED\n' >$c/Containerfile && `+refusedBy(`podman --remote build --no-cache --pid host $c`),
		"stockade refused the container (check namespaces)"),
	// A build step's bind of "/" binds the build context's root, never the
	// engine's (buildah resolves a bind's source inside the context).
	ctrRow("containers_build_mount_root",
		`c=$(mktemp -d); printf 'FROM localhost/img\nRUN --mount=type=bind,source=/,target=/h sh -c "test -e /h/stockade-engine -o -e /h/etc/passwd && echo LEAKED || echo CONTEXT"\n' >$c/Containerfile && `+
			`podman --remote build --no-cache --network none $c 2>&1 | grep -E '^(LEAKED|CONTEXT)$' | head -n 1`,
		"CONTEXT"),
	// A process in the engine's context that no hook checks, a build's
	// RUN step, calls what the engine's own seccomp profile refuses and the
	// build's profile (containers-common's) allows.
	ctrRow("containers_build_engine_seccomp",
		`c=$(mktemp -d); printf 'FROM localhost/img\nRUN /bin/probe remap-file-pages\n' >$c/Containerfile && `+
			`podman --remote build --network none $c 2>&1 | grep -E '^(OK|DENIED)' | head -n 1`,
		"DENIED EPERM"),
	// --require-digest: the image's reference is the one the engine
	// recorded when it made the container, from the name the client gave;
	// a digest written into the config's annotations, which the agent
	// sets at will, counts for nothing.
	digestRow("containers_require_digest_tag", refusedBy(`podman --remote run --rm img true`), "stockade refused the container (check image)"),
	digestRow("containers_require_digest_annotation",
		`D=$(podman --remote image inspect img --format '{{.Digest}}'); `+
			refusedBy(`podman --remote run --rm --annotation io.stockade.image=localhost/img@$D --annotation org.opencontainers.image.ref.name=localhost/img@$D img true`),
		"stockade refused the container (check image)"),
	digestRow("containers_require_digest_pinned",
		`D=$(podman --remote image inspect img --format '{{.Digest}}'); podman --remote run --rm localhost/img@$D echo pinned`, "pinned"),
	// The engine's storage, kept between sessions of the project, holds
	// the records the hooks trust (which image a container was made from):
	// it is mounted in the engine's mount namespace alone, never in the
	// command's view, at its host path or at the engine's, nor reachable
	// through an engine process's /proc/PID/root (Landlock's ptrace
	// scoping). A container that binds it is refused
	// (containers_volume_driver_opts).
	ctrRow("containers_store_unreachable",
		`podman --remote run --rm img true >/dev/null; s=DENIED; `+
			`for d in {data}/stockade/engine/* /stockade-engine/storage /proc/[0-9]*/root/stockade-engine/storage; do `+
			`ls "$d" >/dev/null 2>&1 && s="READ $d"; touch "$d/planted" 2>/dev/null && s="WROTE $d"; done; `+
			`grep -q 'stockade/engine\|stockade-engine' /proc/self/mountinfo && s=MOUNTED; echo $s`,
		"DENIED"),
	// The same storage in a tree the sandbox sees (a --rw path, or the
	// workdir, holding stockade's data directory): the engine gets a
	// storage of the session's instead, and the project's is not made.
	podRow("containers_store_in_rw_path", []string{"--rw", "{data}"},
		`podman --remote run --rm img true >/dev/null; s=DENIED; for d in {data}/stockade/engine/*; do `+
			`ls "$d" >/dev/null 2>&1 && s="READ $d"; touch "$d/planted" 2>/dev/null && s="WROTE $d"; done; echo $s`,
		"DENIED"),
	// Another project's kept storage, in a tree the sandbox sees (a --rw
	// or --ro path holding stockade's data directory), with or without
	// --containers: the storages' directory is masked, and a storage
	// cannot be planted there for a project's next session either.
	{name: "store_other_project_in_rw", setup: otherStore, flags: []string{"--rw", "{data}"}, args: sh(otherStoreProbe), want: "DENIED"},
	{name: "store_other_project_in_ro", setup: otherStore, flags: []string{"--ro", "{data}"}, args: sh(otherStoreProbe), want: "DENIED"},
	{name: "store_none_yet_in_rw", flags: []string{"--rw", "{data}"}, args: sh(otherStoreProbe), want: "DENIED"},
	// A tree of the view inside the storages' directory is refused.
	{name: "store_tree_in_storages", setup: otherStore, flags: []string{"--rw", "{data}/stockade/engine/other-0123456789ab"},
		args: probe("read", "{data}/stockade/engine/other-0123456789ab/vfs-containers/containers.json"), want: "REFUSED", refused: "where stockade keeps every project's sandbox HOME and container storage"},
	// A container left running when the command exits, planting a name a
	// placeholder holds (.envrc runs at the user's next cd with direnv)
	// over and over: init cannot signal the engine's processes, so the
	// placeholders go and the checks run only once the kernel has killed
	// every process of the sandbox. Nothing the container made may be
	// left on the host. (The window this row aims at is short and was not
	// hit on this machine without the defence; internal/sandbox
	// TestEngineQuietAfterReap holds the ordering itself.)
	plantAfterExit(ctrRow("containers_plant_after_exit",
		`docker run -d -v {work}:/w img sh -c 'while :; do : >/w/.envrc; done 2>/dev/null' >/dev/null && sleep 1 && echo STARTED`, "STARTED")),
}

// refusedBy runs a client command and prints the start of the hook's
// refusal in its error, "stockade refused the container (check NAME)", or
// nothing: a container that ran prints no refusal.
func refusedBy(cmd string) string {
	return cmd + ` 2>&1 | grep -o 'stockade refused the container (check [a-z_]*)' | head -n 1`
}

// apiRefusal prints the start of the engine API filter's refusal,
// "stockade refused the request (check NAME)", or the RUN step's
// REACHED or UNREACHED when the request went through.
const apiRefusal = `grep -oE 'stockade refused the request \([a-z_]*\)|^(REACHED|UNREACHED)$' | head -n 1`

// otherStore makes another project's kept engine storage, with a record.
func otherStore(fx *fixture) error {
	d := filepath.Join(fx.data, "stockade", "engine", "other-0123456789ab", "vfs-containers")
	if err := os.MkdirAll(d, 0o700); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(d, "containers.json"), []byte("[]\n"), 0o600)
}

// otherStoreProbe reads and writes every storage it finds, and makes one.
const otherStoreProbe = `s=DENIED; for d in {data}/stockade/engine/*; do ls "$d/" >/dev/null 2>&1 && s="READ $d"; ` +
	`touch "$d/planted" 2>/dev/null && s="WROTE $d"; done; ` +
	`mkdir -p {data}/stockade/engine/proj-0123456789ab/vfs-containers 2>/dev/null && s=PLANTED; echo $s`

// plantAfterExit: the row's workdir has no .envrc, and has none after it.
func plantAfterExit(r row) row {
	r.setup = without("work/.envrc")
	r.check = func(fx *fixture) error {
		p := filepath.Join(fx.base, "work/.envrc")
		if _, err := os.Lstat(p); err == nil {
			return fmt.Errorf("%s was planted by a container that outlived the command", p)
		}
		return nil
	}
	return r
}

// ctrConfined prints CONFINED in a container that binds the workdir at /w
// and is as confined as the hooks make every container, or else the name
// of each thing that is missing (USERNS: it could make a user namespace,
// which the workload profile refuses). It runs under sh -c '...': no
// single quote in it.
const ctrConfined = `s=; ` +
	`grep -q "^NoNewPrivs:[[:space:]]*1" /proc/self/status || s="$s NO_NNP"; ` +
	`grep -q "^Seccomp:[[:space:]]*2" /proc/self/status || s="$s NO_SECCOMP"; ` +
	`/bin/probe unshare user | grep -q "^DENIED EPERM" || s="$s USERNS"; ` +
	`[ -n "$(head -c 1 /proc/kallsyms)" ] && s="$s KALLSYMS"; [ -n "$(head -c 1 /proc/timer_list)" ] && s="$s TIMER_LIST"; ` +
	`grep -q " /proc proc [^ ]*hidepid=\(2\|invisible\)" /proc/mounts || s="$s NO_HIDEPID"; ` +
	`grep -q escape-test /w/.env && s="$s ENV"; echo ${s:-CONFINED}`

// ctrAuthProxy, in a container, asks the sandbox's auth proxy for its
// github route by every way there might be and prints DENIED or REACHED
// ADDRESS, then looks for the fixture's real keys (split in two, so that
// the script does not hold them whole) in every process it sees and
// prints KEY-ABSENT or KEY-LEAKED. It runs under sh -c '...': no single
// quote in it.
const ctrAuthProxy = `r=DENIED; q="GET /github/ HTTP/1.0\r\nAuthorization: token sk-proxy\r\n\r\n"; ` +
	`for a in 10.0.2.2 169.254.1.1 10.88.0.1 10.0.2.3; do printf "$q" | nc -w 3 $a 2376 2>/dev/null | grep -q "^HTTP/1" && r="REACHED $a:2376"; done; ` +
	`printf "CONNECT 127.0.0.1:2376 HTTP/1.1\r\nHost: 127.0.0.1:2376\r\n\r\n$q" | nc -w 3 169.254.1.1 3128 2>/dev/null | grep -q "^HTTP/1.. [^4]" && r="REACHED through the pods HTTP proxy"; ` +
	`printf "GET http://127.0.0.1:2376/github/ HTTP/1.1\r\nHost: 127.0.0.1:2376\r\nAuthorization: token sk-proxy\r\n\r\n" | nc -w 3 169.254.1.1 3128 2>/dev/null | grep -q "^HTTP/1.. [^4]" && r="REACHED through the pods HTTP proxy"; ` +
	`printf "\005\001\000\005\001\000\001\177\000\000\001\011\110$q" | nc -w 3 169.254.1.1 1080 2>/dev/null | grep -aq "HTTP/1" && r="REACHED through the pods SOCKS5 proxy"; ` +
	`A=ghp_escape; B=_test; C=sk-ant-escape; D=-test; k=KEY-ABSENT; ` +
	`grep -aqF -e "$A$B" -e "$C$D" /proc/[0-9]*/environ /proc/[0-9]*/cmdline 2>/dev/null && k=KEY-LEAKED; ` +
	`env | grep -qF -e "$A$B" -e "$C$D" && k=KEY-LEAKED; echo $r $k`

// hostEngineSockets are where a host's container engine listens in its
// user's HOME, relative to it.
var hostEngineSockets = []string{
	".docker/desktop/docker.sock", // Docker Desktop
	".docker/run/docker.sock",     // rootless docker's context
}

// withHostSockets makes the row's fixture listen at hostEngineSockets in
// the real HOME and at the workdir's tmp/docker.sock, and checks after
// the row that each still answers on the host: a row that found them
// unreachable found them masked, not missing.
func withHostSockets(r row) row {
	paths := func(fx *fixture) []string {
		ps := []string{filepath.Join(fx.work, "tmp", "docker.sock")}
		for _, p := range hostEngineSockets {
			ps = append(ps, filepath.Join(fx.home, p))
		}
		return ps
	}
	r.setup = func(fx *fixture) error {
		for _, p := range paths(fx) {
			if len(p) >= len(unix.RawSockaddrUnix{}.Path) {
				// The probe in the sandbox could not name it either, and
				// would find it "unreachable" for that alone.
				return fmt.Errorf("%s is too long for a unix socket: shorten the row's name", p)
			}
			if err := listenUnix(p); err != nil {
				return err
			}
		}
		return nil
	}
	r.check = func(fx *fixture) error {
		for _, p := range paths(fx) {
			c, err := net.Dial("unix", p)
			if err != nil {
				return fmt.Errorf("the fixture's socket %s does not answer on the host: %w", p, err)
			}
			c.Close()
		}
		return nil
	}
	return r
}

// ctrImage makes the image img from the host's static busybox and the
// probe, through the engine, before a container row's script.
var ctrImage = `set -e; d=$(mktemp -d); mkdir $d/bin; cp /bin/busybox $d/bin/; cp {probe} $d/bin/probe; ` +
	`for c in ` + strings.Join(ctrApplets, " ") + `; do ln -s busybox $d/bin/$c; done; ` +
	`tar -C $d -cf $d.tar .; podman --remote import -q $d.tar img >/dev/null; set +e; `

// ctrApplets are the busybox applets the rows' containers run.
var ctrApplets = []string{"sh", "echo", "cat", "test", "grep", "umount", "mount", "nc", "true", "tail", "touch", "sleep", "tr", "head", "wget", "nslookup", "printf", "env", "chown", "chmod", "mkdir"}

// digestRow is a ctrRow under --require-digest.
func digestRow(name, script, want string) row {
	r := ctrRow(name, script, want)
	r.flags = append(r.flags, "--require-digest")
	return r
}

func ctrRow(name, script, want string) row {
	return podRow(name, nil, script, want)
}

// podRow is a ctrRow with more flags.
func podRow(name string, flags []string, script, want string) row {
	return row{name: name, flags: append([]string{"--containers"}, flags...), args: sh(ctrImage + script), want: want, timeout: time.Minute}
}
