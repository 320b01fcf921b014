package engine

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/stockade-dev/stockade/internal/ocihook"
	"github.com/stockade-dev/stockade/internal/sandboxnet"
)

// Paths of the engine's own root, which only the engine's mount namespace
// has (the command's view has none of them).
const (
	confDir  = "/stockade-engine"                 // generated, read-only to the engine
	storage  = "/stockade-engine/storage"         // images and containers
	driver   = "vfs"                              // the storage's driver (see storageConf)
	hooksDir = "/stockade-engine/hooks.d"         // the OCI hooks' definitions
	binary   = "/stockade-engine/stockade"        // the stockade binary: the hooks, and seal in each container
	volumes  = "/stockade-engine/storage/volumes" // named volumes
	// slirpWrapper is the engine's slirp4netns: the real one, never with
	// a way to the sandbox's loopback (see slirpScript).
	slirpWrapper = "/stockade-engine/slirp4netns"
	// resolvConf is the engine's /etc/resolv.conf: the pods' DNS stub.
	resolvConf = "/stockade-engine/resolv.conf"
	// runDir is the engine's XDG_RUNTIME_DIR: podman's rootless network
	// namespace sees only this part of the engine's /run, so its runroot
	// is below it.
	runDir  = "/run/user/0"
	runRoot = runDir + "/containers" // the storage's locks, and each container's hosts, resolv.conf
	// engineHome is the engine's HOME, engineTmp its TMPDIR: a build's
	// context and buildah's run and cache directories are below it.
	engineHome = "/run/engine"
	engineTmp  = engineHome + "/tmp"
)

// Paths in the engine's root that stockade run there (the hooks, the
// runtime) knows.
const (
	// FactsFile holds the session's facts (ocihook.Facts).
	FactsFile = "/stockade-engine/facts.json"
	// EventsSocket is where the hooks and the runtime report a refusal to
	// the supervisor.
	EventsSocket = "/stockade-engine/events.sock"
	// RuntimeName is the name of the stockade binary as the engine's OCI
	// runtime (a link to binary): stockade checks what the hooks do not
	// see and runs the real runtime (ocihook.RuntimeCall).
	RuntimeName = "stockade-runtime"
	runtimePath = "/stockade-engine/" + RuntimeName
	// podmanSocket is podman's own API socket, in the engine's root, a
	// path in no view of the command's: the launcher's filter connects
	// to it (apiFilter); the command's clients reach podman through
	// Socket, which the launcher serves.
	podmanSocket = "/stockade-engine/podman.sock"
	// serviceDir is podman's working directory: empty, and read-only to
	// the engine. `kube play` builds an image it lacks from
	// <working directory>/<image name>/Containerfile with chroot
	// isolation (buildah runs the steps itself, past every check):
	// under the sandbox's / that was the command's /tmp/Containerfile
	// for localhost/tmp.
	serviceDir = "/stockade-engine/service"
)

// containerPath is PATH in a container whose image sets none.
const containerPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// containersConf is the engine's containers.conf. Every container runs
// without a cgroup of its own (the engine's namespace has none it may
// delegate) and with crun (which takes a cgroup2-only view); its runtime,
// still "crun" to the engine, is stockade in front of crun (RuntimeName).
// Its default capabilities are the hooks' (ocihook.DefaultCaps): one
// beyond them is one the agent asked for, which the createRuntime check
// refuses by name.
//
// The network: a container's own network namespace, joined to the outside
// by slirp4netns, whose sockets are in the sandbox's network namespace
// (only lo there), through slirpWrapper, which never lets it reach the
// sandbox's loopback. So a container reaches sandboxnet.PodHost, where the
// pods' proxies and DNS stub listen, and nothing else: every variable that
// points a client at a proxy points at them (http_proxy = false: the
// engine's own variables, which name the registry proxy, are not copied
// in), and every name server leads to the pods' stub. The engine picks
// a container's name servers as podman does, with none given here: on a
// network with DNS (one a compose file or `docker network create` makes)
// the network's aardvark-dns first, which answers the names of its
// containers (compose's service names) and forwards the rest, which
// reaches the pods' stub; on slirp4netns, slirp4netns's 10.0.2.3, which
// forwards to the engine's resolv.conf (resolvConfText: the pods' stub);
// then that resolv.conf's name server itself. A name server a client names (--dns, dns_servers
// here, which would hide the network's) is no way out: a container's
// packets leave through slirp4netns into the sandbox's network namespace,
// where only the pods' listeners are. IPv6 is off: slirp4netns's
// IPv6 gateway would be one more address to keep closed, and there is no
// IPv6 way out of the sandbox anyway.
func containersConf() string {
	env := append([]string{containerPath, "TERM=xterm"}, sandboxnet.PodProxyEnv()...)
	return fmt.Sprintf(`# Generated by stockade for this session's engine; not read from the host.
[containers]
cgroups = "disabled"
netns = "slirp4netns"
env = [%s]
http_proxy = false
log_driver = "k8s-file"
default_capabilities = [%s]

[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
runtime = "crun"
hooks_dir = [%q]
network_cmd_path = %q
network_cmd_options = ["allow_host_loopback=false", "enable_ipv6=false"]

[engine.runtimes]
crun = [%q]
`, quoteList(env), quoteList(ocihook.DefaultCaps), hooksDir, slirpWrapper, runtimePath)
}

// slirpScript is slirpWrapper: slirp4netns with --disable-host-loopback
// whatever podman passes. A container's network options are the client's
// (podman run --network slirp4netns:allow_host_loopback=true), and with
// that option slirp4netns would take 10.0.2.2 to the sandbox's 127.0.0.1,
// where the command's own proxies serve the agent's policy and the
// registry proxy the engine's pulls.
func slirpScript() string {
	return `#!/bin/sh
# Generated by stockade: a container never reaches the sandbox's loopback.
exec /usr/bin/slirp4netns --disable-host-loopback "$@"
`
}

// resolvConfText is the engine's resolv.conf. slirp4netns forwards what a
// container sends to its 10.0.2.3, on any port, to the first name server
// here; the sandbox's own (the command's stub on 127.0.0.1) must not be it.
func resolvConfText() string {
	return "# Generated by stockade: the pods' DNS stub.\nnameserver " + sandboxnet.PodHost + "\n"
}

// hooks are the OCI hooks every container goes through (package ocihook),
// as podman's hooks directory takes them, by file name: both run the
// stockade binary the launcher put in the engine's root, with the facts
// file beside it. Precreate rewrites the config; createRuntime, which the
// runtime runs once the container's namespaces exist, checks it and
// reports a refusal to the session.
func hooks() map[string]string {
	hook := func(stage string, args ...string) string {
		b, _ := json.Marshal(map[string]any{
			"version": "1.0.0",
			"hook":    map[string]any{"path": binary, "args": append([]string{"stockade", "hook"}, args...)},
			"when":    map[string]any{"always": true},
			"stages":  []string{stage},
		})
		return string(b)
	}
	return map[string]string{
		"stockade-precreate.json":     hook("precreate", "precreate", "--facts", FactsFile),
		"stockade-createruntime.json": hook("createRuntime", "createruntime", "--facts", FactsFile, "--events", EventsSocket),
	}
}

// storageConf keeps images with the vfs driver: it needs no mount of its
// own (overlay in a user namespace and fuse-overlayfs, which needs
// /dev/fuse, both would), at the price of a full copy of an image's layers
// per container.
func storageConf() string {
	return fmt.Sprintf(`# Generated by stockade for this session's engine.
[storage]
driver = %q
graphroot = %q
runroot = %q
`, driver, storage, runRoot)
}

// registriesConf is the engine's registries.conf: no registry to search
// for a short name (a pull names its registry), and the registries of
// --registry-allow that speak plain HTTP marked insecure, which podman
// needs to use them at all.
func registriesConf(regs []Registry) string {
	var b strings.Builder
	b.WriteString("# Generated by stockade for this session's engine.\nunqualified-search-registries = []\nshort-name-mode = \"permissive\"\n")
	for _, r := range regs {
		if r.Insecure {
			fmt.Fprintf(&b, "\n[[registry]]\nlocation = %q\ninsecure = true\n", r.Host)
		}
	}
	return b.String()
}

// clientConf is ClientConf's content.
func clientConf() string {
	return `# Generated by stockade: the podman client's defaults for this sandbox's engine.
[containers]
cgroups = "disabled"
http_proxy = false
`
}

func quoteList(s []string) string {
	q := make([]string, len(s))
	for i, v := range s {
		q[i] = fmt.Sprintf("%q", v)
	}
	return strings.Join(q, ", ")
}
