package escape

import (
	"fmt"
	"os"
	"path/filepath"
	"time"
)

// containerRows: containers the agent starts through the engine of
// --containers (package engine) are held by the sandbox's walls. The engine
// sees the sandbox's view, never the host's; every mount it inherits is
// locked, so masks and read-only binds hold in a container whatever its
// options; its namespaces are the sandbox's or its own. Each row imports a
// busybox image through the engine first (no registry is reachable here).
// A refusal is the engine's error, as the agent sees it.
var containerRows = []row{
	// The sanity row: both clients work, so the denials below are real.
	ctrRow("containers_docker_run_works", `docker run --rm img echo hi`, "hi"),
	ctrRow("containers_podman_run_works", `podman --remote run --rm img echo hi`, "hi"),
	// The host's root: the engine's / is the sandbox's view.
	ctrRow("containers_bind_root",
		`docker run --rm -v /:/host img sh -c 'test -e /host{home}/.ssh/id_rsa && echo LEAKED || echo DENIED'`, "DENIED"),
	// The real HOME is not in the view; $HOME is the sandbox HOME.
	ctrRow("containers_bind_home",
		`docker run --rm -v $HOME:/h img sh -c 'test -e /h/.ssh/id_rsa && echo LEAKED || echo DENIED'`, "DENIED"),
	// --privileged needs a sysfs of a network namespace the engine's user
	// namespace does not own: the kernel refuses, the engine says so.
	ctrRow("containers_privileged",
		`podman --remote run --rm --privileged img true 2>&1 | grep -q 'OCI permission denied' && echo REFUSED`, "REFUSED"),
	// Every capability and no seccomp: the protected hooks stay read-only
	// (a locked read-only bind), the mask cannot be unmounted nor the bind
	// remounted.
	ctrRow("containers_capall_git_hooks",
		`docker run --rm --cap-add ALL --security-opt seccomp=unconfined -v {work}:/w img sh -c 'mount -o remount,rw /w/.git/hooks 2>/dev/null; echo x >>/w/.git/hooks/pre-commit && echo WROTE || echo DENIED' 2>/dev/null`, "DENIED"),
	ctrRow("containers_capall_env_mask",
		`docker run --rm --cap-add ALL --security-opt seccomp=unconfined -v {work}:/w img sh -c 'umount /w/.env 2>/dev/null; grep -q escape-test /w/.env && echo LEAKED || echo DENIED'`, "DENIED"),
	// A non-recursive bind of the workdir would leave the masks behind:
	// the kernel copies a tree with locked children only whole.
	ctrRow("containers_bind_nonrecursive_env",
		`podman --remote run --rm --mount type=bind,src={work},dst=/w,bind-nonrecursive img sh -c 'grep -q escape-test /w/.env && echo LEAKED || echo DENIED' 2>&1 | tail -n 1`, "DENIED"),
	// The host's PID namespace: the engine's "host" is the sandbox's, and
	// without cgroups podman refuses to share it at all.
	ctrRow("containers_pid_host",
		`docker run --rm --pid host img cat /proc/1/comm 2>&1 | grep -q 'private PID namespace' && echo REFUSED`, "REFUSED"),
	// The host's network: the engine's "host" network is its own
	// namespace, with loopback only.
	ctrRow("containers_network_host",
		`docker run --rm --network host img sh -c 'echo | nc -w 2 127.0.0.1 {hostport} && echo LEAKED || echo DENIED' 2>/dev/null`, "DENIED"),
	// The host's engine sockets are not in the view: a bind of their paths
	// binds nothing that answers.
	ctrRow("containers_host_docker_socket",
		`docker run --rm -v /run/docker.sock:/d.sock -v /run/podman:/p img sh -c 'test -S /d.sock || test -S /p/podman.sock && echo LEAKED || echo DENIED'`, "DENIED"),
	ctrRow("containers_sandbox_host_socket",
		`test -S /var/run/docker.sock || test -S /run/podman/podman.sock && echo LEAKED || echo DENIED`, "DENIED"),
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
		`docker run --rm img sh -c 'echo | nc -w 3 169.254.1.1 3129 >/dev/null && echo LEAKED || echo DENIED' 2>/dev/null`, "DENIED"),
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

// ctrImage makes the image img from the host's static busybox, through the
// engine, before a container row's script.
const ctrImage = `set -e; d=$(mktemp -d); mkdir $d/bin; cp /bin/busybox $d/bin/; ` +
	`for c in sh echo cat test grep umount mount nc true tail touch wget nslookup; do ln -s busybox $d/bin/$c; done; ` +
	`tar -C $d -cf $d.tar .; podman --remote import -q $d.tar img >/dev/null; set +e; `

func ctrRow(name, script, want string) row {
	return podRow(name, nil, script, want)
}

// podRow is a ctrRow with more flags.
func podRow(name string, flags []string, script, want string) row {
	return row{name: name, flags: append([]string{"--containers"}, flags...), args: sh(ctrImage + script), want: want, timeout: time.Minute}
}
