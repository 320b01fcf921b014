package escape

import "strings"

// composeRows: a compose file asks the engine for what the docker CLI's
// flags ask, through Debian's docker-compose (1.29, on the Docker API), but
// by other requests: docker-py's create and start of a container, the
// network compose makes for the stack (a bridge in podman's own network
// namespace, with aardvark-dns for the services' names, which no docker
// CLI row makes) and its named volumes, made through the Docker API's
// volume create. Each must meet the verdict of the CLI's row
// (rows_containers_test.go).
var composeRows = []row{
	// The sanity row: a stack runs, so the denials below are real.
	composeRow("compose_up_works", "    command: [echo, compose-works]\n", composeRun, "compose-works"),
	composeRow("compose_bind_root", "    volumes: [\"/:/host\"]\n", composeRefused, "stockade refused the container (check mounts)"),
	composeRow("compose_bind_home", "    volumes: [\"${HOME}:/h\"]\n", composeRefused, "stockade refused the container (check mounts)"),
	composeRow("compose_privileged", "    privileged: true\n", composeRefused, "stockade refused the container (check capabilities)"),
	composeRow("compose_cap_add_all", "    cap_add: [ALL]\n", composeRefused, "stockade refused the container (check capabilities)"),
	composeRow("compose_seccomp_unconfined", "    security_opt: [\"seccomp:unconfined\"]\n", composeRefused, "stockade refused the container (check seccomp)"),
	composeRow("compose_device", "    devices: [\"/dev/null:/dev/sda\"]\n", composeRefused, "stockade refused the container (check mounts)"),
	composeRow("compose_network_mode_host", "    network_mode: host\n", composeRefused, "stockade refused the container (check namespaces)"),
	// The engine's network namespace, the sandbox's, by path: the engine,
	// root of a user namespace below the sandbox's, holds no capability
	// over it, so the runtime's setns fails in the kernel.
	composeRow("compose_network_mode_ns_path", "    network_mode: \"ns:/proc/self/ns/net\"\n",
		composeUp+` 2>&1 | grep -q 'cannot setns .*Operation not permitted' && echo REFUSED`, "REFUSED"),
	composeRow("compose_pid_host", "    pid: host\n", composeUp+` 2>&1 | grep -q 'private PID namespace' && echo REFUSED`, "REFUSED"),
	// A named volume whose driver options bind the engine's storage,
	// made by compose through the Docker API (containers_volume_driver_opts
	// makes it through podman's own): the filter refuses the volume.
	composeRow("compose_volume_driver_opts", "    volumes: [\"w:/x\"]\n"+
		"volumes:\n  w:\n    driver_opts: {type: none, o: bind, device: /stockade-engine/storage}\n",
		composeUp+` 2>&1 | `+apiRefusal, "stockade refused the request (volume)"),
	// The stack's network is a bridge in podman's network namespace, which
	// slirp4netns (the engine's wrapper: no way to the sandbox's loopback)
	// joins to the sandbox's, where only the pods' listeners are: the
	// command's proxy, the registry proxy and the test network stay out
	// of reach, and the pods' stub answers what the stack's aardvark-dns
	// forwards.
	composeRow("compose_network_agent_proxy",
		"    command: [sh, -c, \"echo | nc -w 3 10.0.2.2 3128 >/dev/null && echo LEAKED || echo DENIED\"]\n", composeRun, "DENIED"),
	composeRow("compose_network_registry_proxy",
		"    command: [sh, -c, \"echo | nc -w 3 169.254.1.1 3130 >/dev/null && echo LEAKED || echo DENIED\"]\n", composeRun, "DENIED"),
	composeRow("compose_network_direct",
		"    command: [sh, -c, \"echo | nc -w 3 198.51.100.10 80 >/dev/null && echo LEAKED || echo DENIED\"]\n", composeRun, "DENIED"),
	composeRow("compose_network_not_allowed",
		"    command: [sh, -c, \"wget -q -O /dev/null http://198.51.100.10/ 2>&1 | grep -q ' 403 ' && echo DENIED || echo LEAKED\"]\n", composeRun, "DENIED"),
	composeRow("compose_network_dns",
		"    command: [sh, -c, \"nslookup example.com 2>&1 | grep -q 'can.t find' && echo DENIED || echo LEAKED\"]\n", composeRun, "DENIED"),
	// A name server the compose file names, the test network's, which
	// knows allowed.test: its packets leave through slirp4netns too, where
	// nothing but the pods' stub is reached.
	composeRow("compose_dns_server_named",
		"    dns: [198.51.100.53]\n    command: [sh, -c, \"nslookup allowed.test 2>&1 | grep -q '198.51.100.10' && echo LEAKED || echo DENIED\"]\n", composeRun, "DENIED"),
}

// The container rows are one family: compose's run with them.
func init() { containerRows = append(containerRows, composeRows...) }

// composeUp starts the stack of the compose file in the working
// directory; composeRun runs its one service in the foreground, printing
// what the service prints; composeRefused prints the start of the hook's
// refusal of the stack (refusedBy).
const composeUp = `docker-compose -p r up -d`

var (
	composeRun     = `docker-compose -p r run --rm -T s 2>/dev/null`
	composeRefused = refusedBy(composeUp)
)

// composeRow is a ctrRow whose script writes a compose file with one
// service s, from the rows' image (true, unless service has a command),
// whose lines past the image are service
// (and whatever top-level keys follow it), into a directory of its own,
// and runs cmd there.
func composeRow(name, service, cmd, want string) row {
	file := "version: \"3\"\nservices:\n  s:\n    image: img\n"
	if !strings.Contains(service, "command:") {
		file += "    command: [\"true\"]\n" // the image has none
	}
	file += service
	if strings.Contains(file, "\nEOF\n") {
		panic("composeRow " + name + ": the compose file ends the here-document")
	}
	return ctrRow(name, "c=$(mktemp -d); cd $c && cat >docker-compose.yml <<'EOF'\n"+file+"EOF\n"+cmd, want)
}
