package engine

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/stockade-dev/stockade/internal/ocihook"
)

// apiFilter stands between the command and podman's API: the command's
// clients connect to Socket, which the launcher serves, and each request
// they send is read, checked, and sent on to podman on a connection of
// the filter's own. It refuses what podman offers but no setting of its
// configuration forbids, and what would pass none of the hooks' and the
// runtime's checks (refusal).
//
// Every request of a connection is read and checked, one after another,
// so a second request on a kept-alive connection is checked as the first
// was. A request goes on as the filter read it, written again by
// net/http, its query re-encoded from what was checked: podman parses
// exactly what was judged, never the client's bytes. Only an answer that
// takes the connection over (101, or the Docker API's raw stream: attach
// and exec) turns it into a plain relay: podman reads no further request
// on a connection it has taken over.
type apiFilter struct {
	// dial connects to podman's own socket.
	dial func() (net.Conn, error)
	// refused hears each request the filter refuses (nil: none).
	refused func(ocihook.Report)
	// conns bounds the connections served at once (0: maxAPIConns).
	conns int
}

// maxAPIHeader bounds a request's line and header (the Docker API's
// largest, X-Registry-Config, holds a few KiB per registry), and
// maxAPIConns the connections served at once, so that the command's
// clients cannot make the launcher, outside the session's memory limit,
// hold much: 64 MiB of headers at most.
const (
	maxAPIHeader = 256 << 10
	maxAPIConns  = 256
)

// serve serves ln until it is closed.
func (f *apiFilter) serve(ln net.Listener) error {
	var pause time.Duration
	if f.conns == 0 {
		f.conns = maxAPIConns
	}
	slots := make(chan struct{}, f.conns)
	for {
		c, err := ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return err
			}
			// Out of descriptors, most likely: the command's many
			// clients. Wait, and go on.
			pause = min(max(2*pause, 5*time.Millisecond), time.Second)
			time.Sleep(pause)
			continue
		}
		pause = 0
		select {
		case slots <- struct{}{}:
			go func() {
				defer func() { <-slots }()
				f.conn(c)
			}()
		default:
			go func() {
				defer c.Close()
				apiError(c, http.StatusServiceUnavailable, fmt.Sprintf("stockade: the container engine's socket serves %d connections at once; close some and retry", f.conns))
			}()
		}
	}
}

// conn serves one connection of the command's.
func (f *apiFilter) conn(c net.Conn) {
	defer c.Close()
	lr := &io.LimitedReader{R: c}
	br := bufio.NewReader(lr)
	var up net.Conn
	var ubr *bufio.Reader
	defer func() {
		if up != nil {
			up.Close()
		}
	}()
	for {
		lr.N = maxAPIHeader
		if _, err := br.Peek(1); err != nil {
			return // the client is done
		}
		req, err := http.ReadRequest(br)
		if err != nil {
			if errors.Is(err, io.EOF) {
				err = fmt.Errorf("the request is cut short, or its header is over %d KiB", maxAPIHeader>>10)
			}
			apiError(c, http.StatusBadRequest, "stockade: a request to the container engine that could not be read: "+err.Error())
			return
		}
		lr.N = 1 << 62
		if req.ProtoMajor != 1 {
			apiError(c, http.StatusBadRequest, "stockade: a request to the container engine that could not be read: "+req.Proto+" is not HTTP/1")
			return
		}
		r := refusal(req)
		if r == nil {
			r = bodyRefusal(req)
		}
		if r == nil {
			r = f.archive(req)
		}
		if r != nil {
			if f.refused != nil {
				f.refused(*r)
			}
			apiError(c, http.StatusForbidden, "stockade refused the request ("+r.Check+"): "+r.Reason)
			return
		}
		if up == nil {
			if up, err = f.dial(); err != nil {
				apiError(c, http.StatusBadGateway, "stockade: the container engine does not answer: "+err.Error())
				return
			}
			ubr = bufio.NewReader(up)
		}
		// The request is written while the answer is read: podman may
		// answer (100 Continue, an early error) before the body is in.
		sent := make(chan error, 1)
		go func() { sent <- req.Write(up) }()
		resp, err := answer(ubr, req, c)
		if err != nil {
			apiError(c, http.StatusBadGateway, "stockade: the container engine's answer could not be read: "+err.Error())
			return
		}
		if takenOver(resp) {
			relay(c, br, up, ubr, resp)
			return
		}
		werr := resp.Write(c)
		resp.Body.Close()
		if werr != nil || <-sent != nil || resp.Close || req.Close {
			return
		}
	}
}

// answer reads podman's answer to req, passing any interim one (100
// Continue) on to the client first.
func answer(ubr *bufio.Reader, req *http.Request, c io.Writer) (*http.Response, error) {
	for {
		resp, err := http.ReadResponse(ubr, req)
		if err != nil {
			return nil, err
		}
		if resp.StatusCode >= 200 || resp.StatusCode == http.StatusSwitchingProtocols {
			return resp, nil
		}
		if err := writeHead(c, resp); err != nil {
			return nil, err
		}
	}
}

// takenOver tells an answer after which the connection is a stream, no
// longer HTTP: an upgrade, or the Docker API's attach and exec, which
// answer 200 with a raw stream when the client asked for no upgrade.
func takenOver(resp *http.Response) bool {
	if resp.StatusCode == http.StatusSwitchingProtocols {
		return true
	}
	switch strings.TrimSpace(strings.Split(resp.Header.Get("Content-Type"), ";")[0]) {
	case "application/vnd.docker.raw-stream", "application/vnd.docker.multiplexed-stream":
		return true
	}
	return false
}

// writeHead writes resp's status line and header as podman sent them.
func writeHead(w io.Writer, resp *http.Response) error {
	bw := bufio.NewWriter(w)
	fmt.Fprintf(bw, "HTTP/%d.%d %s\r\n", resp.ProtoMajor, resp.ProtoMinor, resp.Status)
	h := resp.Header.Clone()
	if len(resp.TransferEncoding) > 0 {
		h.Set("Transfer-Encoding", strings.Join(resp.TransferEncoding, ", "))
	}
	h.Write(bw)
	bw.WriteString("\r\n")
	return bw.Flush()
}

// relay passes a taken-over connection's bytes both ways until podman's
// side ends; the client's end of input is passed on as a half-close.
func relay(c net.Conn, br *bufio.Reader, up net.Conn, ubr *bufio.Reader, resp *http.Response) {
	if writeHead(c, resp) != nil {
		return
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		io.Copy(up, br)
		if cw, ok := up.(interface{ CloseWrite() error }); ok {
			cw.CloseWrite()
		}
	}()
	io.Copy(c, ubr)
	// podman is done: so is the client's side.
	c.Close()
	up.Close()
	wg.Wait()
}

// apiError answers with podman's own form of an error, which the docker
// and podman clients print, and closes the connection's writing side.
func apiError(c net.Conn, status int, msg string) {
	body, _ := json.Marshal(map[string]any{"cause": msg, "message": msg, "response": status})
	fmt.Fprintf(c, "HTTP/1.1 %d %s\r\nContent-Type: application/json\r\nConnection: close\r\nContent-Length: %d\r\n\r\n%s\n",
		status, http.StatusText(status), len(body)+1, body)
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	drainConn(c)
}

// drainConn half-closes c and reads what the client still sends, so that
// the close is no reset, which can destroy the answer before the client
// reads it.
func drainConn(c net.Conn) {
	if cw, ok := c.(interface{ CloseWrite() error }); ok {
		cw.CloseWrite()
	}
	io.Copy(io.Discard, io.LimitReader(c, 64<<20))
}

// isolations are the build isolations the filter lets through (the
// libpod API's isolation parameter, by name or by buildah's number):
// those whose RUN steps go through the engine's runtime, where the build
// checks are. buildah's chroot (2, and any other) runs a step itself.
var isolations = map[string]bool{
	"": true, "default": true, "oci": true, "rootless": true,
	"0": true, "1": true, "3": true,
}

// engineSide are the build parameters that have podman run or read, on
// the engine's side, what the client names: additionalbuildcontexts binds
// any path of the engine's root into a RUN step (its whole / with
// podman's own socket and the kept storage), cppflags passes flags to the
// cpp podman runs on a Containerfile.in (-fplugin= loads a library of the
// client's into it), rusagelogfile writes where the client says.
var engineSide = map[string]string{
	"additionalbuildcontexts": "an additional build context is a path on the engine's side, outside the build's context",
	"cppflags":                "the flags go to the preprocessor the engine runs on a Containerfile.in, where -fplugin= loads a library",
	"rusagelogfile":           "the engine would write the log at a path of the client's, on its side",
}

// refusal is why req may not reach podman, or nil.
func refusal(req *http.Request) *ocihook.Report {
	q, err := url.ParseQuery(req.URL.RawQuery)
	if err != nil {
		return &ocihook.Report{Check: "request", Field: "query",
			Reason: "a query podman would read otherwise than stockade (" + err.Error() + "); separate parameters with & only"}
	}
	secrets := endpoint(req, "secrets", "create")
	for key, values := range q {
		// podman decodes a query into its parameters by gorilla/schema,
		// which matches names with strings.EqualFold: "Isolation",
		// "ISOLATION" and "iſolation" are all isolation.
		for name, why := range engineSide {
			if strings.EqualFold(key, name) {
				return &ocihook.Report{Check: "build", Field: name, Reason: why + "; build without it"}
			}
		}
		if secrets {
			if r := secretDriver(key, values); r != nil {
				return r
			}
		}
		if r := buildSources(key, values); r != nil {
			return r
		}
		if !strings.EqualFold(key, "isolation") {
			continue
		}
		for _, v := range values {
			if !isolations[strings.ToLower(v)] {
				if v == "2" {
					v = "2 (chroot)" // as podman's client sends it
				}
				return &ocihook.Report{Check: "isolation", Field: "isolation",
					Reason: fmt.Sprintf("a build with isolation %q runs its steps outside the engine's runtime, where none of the build checks apply; build with the default isolation (no --isolation, no BUILDAH_ISOLATION)", v)}
			}
		}
	}
	// Checkpoint and restore: a restore imports a whole container
	// configuration from an archive the client sends, runtime included,
	// past the precreate hook. Podman routes on the escaped path
	// (gorilla/mux's UseEncodedPath: a name "x%2Fy" is one segment),
	// and the decoded one is what a cleaner would see: both are judged.
	for _, op := range []string{"checkpoint", "restore"} {
		if endpoint(req, "containers", "", op) {
			return &ocihook.Report{Check: "checkpoint", Field: op,
				Reason: "checkpoint and restore are not offered: a restore takes the container's whole configuration from the archive, past the engine's checks"}
		}
	}
	// The Docker API's secret create names its driver in the body; the
	// libpod API's body is the secret itself.
	if secrets && !endpointAll(req, "libpod", "secrets", "create") && req.Body != nil && req.Body != http.NoBody {
		body, err := io.ReadAll(io.LimitReader(req.Body, maxSecretBody+1))
		if err != nil || len(body) > maxSecretBody {
			return &ocihook.Report{Check: "secret", Field: "body", Reason: fmt.Sprintf("a secret's request must be whole and under %d KiB", maxSecretBody>>10)}
		}
		// As podman decodes it: encoding/json, names folded.
		var create struct{ Driver struct{ Name string } }
		if json.Unmarshal(body, &create) != nil {
			return &ocihook.Report{Check: "secret", Field: "body", Reason: "a secret's request that is not JSON"}
		}
		if r := secretDriver("Driver.Name", []string{create.Driver.Name}); r != nil {
			return r
		}
		req.Body = io.NopCloser(bytes.NewReader(body))
		req.ContentLength = int64(len(body))
		req.TransferEncoding = nil
	}
	req.URL.RawQuery = q.Encode()
	return nil
}

// buildSources refuses the build parameters that name a file or
// directory on the engine's side: a remote context that is a local path
// (podman takes it as the context directory), and a build secret without
// a source in the context (buildah reads its id as a path: id=/x read any
// file of the engine's), from outside it (podman moves src= up from the
// context, a src=../../x moved the engine's own directories), or from the
// engine's environment.
func buildSources(key string, values []string) *ocihook.Report {
	switch {
	case strings.EqualFold(key, "remote"):
		for _, v := range values {
			if v == "" || v == "-" {
				continue
			}
			ok := false
			for _, p := range []string{"http://", "https://", "git://", "github.com/"} {
				ok = ok || strings.HasPrefix(v, p)
			}
			if !ok {
				return &ocihook.Report{Check: "build", Field: "remote",
					Reason: fmt.Sprintf("a remote context %q that is no URL is a directory on the engine's side; send the context (podman build DIR)", v)}
			}
		}
	case strings.EqualFold(key, "secrets"):
		for _, v := range values {
			var list []string
			if json.Unmarshal([]byte(v), &list) != nil {
				continue // podman refuses it
			}
			for _, secret := range list {
				if why := buildSecret(secret); why != "" {
					return &ocihook.Report{Check: "build", Field: "secrets",
						Reason: fmt.Sprintf("the build secret %q %s; give it as --secret id=ID,src=FILE", secret, why)}
				}
			}
		}
	}
	return nil
}

// buildSecret is why a build secret, as podman reads it (comma-separated
// key=value), is refused, or "".
func buildSecret(secret string) string {
	src := false
	for _, tok := range strings.Split(secret, ",") {
		k, v, _ := strings.Cut(tok, "=")
		switch k {
		case "src":
			src = true
			if slices.Contains(strings.Split(filepath.ToSlash(v), "/"), "..") {
				return "comes from outside the build's context"
			}
		case "env":
			return "comes from the engine's environment"
		case "type":
			if v != "file" {
				return "is not a file"
			}
		}
	}
	if !src {
		return "names no file in the build's context (buildah would read its id as a path on the engine's side)"
	}
	return ""
}

// archive refuses a copy into or out of a container with a mount (docker
// cp, podman cp), and names the container by its id in what goes on. podman copies for a container that does not run on the engine's
// side, through the bind's source as the container's config gives it:
// no hook has checked a container that was only created (`podman create
// -v /:/host` then `podman cp f ctr:/host/...` wrote the kept storage),
// and a source in the workdir can have been swapped for a link since the
// container ran. A container's mounts never change after its creation,
// and its id is the one the check read, so a rename in between changes
// nothing.
func (f *apiFilter) archive(req *http.Request) *ocihook.Report {
	op := ""
	for _, o := range []string{"archive", "copy"} {
		if endpoint(req, "containers", "", o) {
			op = o
		}
	}
	if op == "" {
		return nil
	}
	segs := strings.Split(req.URL.Path, "/")
	n := len(segs)
	if req.URL.Path != path.Clean(req.URL.Path) || n < 3 || segs[n-1] != op || strings.ContainsAny(segs[n-2], "%") ||
		req.URL.EscapedPath() != req.URL.Path {
		return &ocihook.Report{Check: "copy", Field: "path", Reason: "a copy whose container is not named plainly (no escapes, no dot segments)"}
	}
	ctr, err := f.inspect(segs[n-2])
	if err != nil {
		return &ocihook.Report{Check: "copy", Field: "container", Reason: "looking the container up: " + err.Error()}
	}
	// Volumes too: one made with --opt type=none,o=bind,device=DIR is
	// that directory while any container that uses it starts, and podman
	// copies through the volume's mount point (a reviewer's copy, beside a
	// start refused in a loop, wrote an image's layer).
	for _, m := range ctr.Mounts {
		return &ocihook.Report{Check: "copy", Field: "mounts", Container: ctr.ID,
			Reason: fmt.Sprintf("the container has a %s mount at %s, through which the engine itself would copy, outside the container's checks; copy into a container without mounts, or through the workdir", m.Type, m.Destination)}
	}
	segs[n-2] = ctr.ID
	req.URL.Path, req.URL.RawPath = strings.Join(segs, "/"), ""
	return nil
}

// inspected is what archive reads of a container.
type inspected struct {
	ID     string `json:"Id"`
	Mounts []struct {
		Type, Destination string
	}
}

// inspect asks podman, on a connection of its own, for the container name
// names.
func (f *apiFilter) inspect(name string) (inspected, error) {
	var ctr inspected
	up, err := f.dial()
	if err != nil {
		return ctr, err
	}
	defer up.Close()
	up.SetDeadline(time.Now().Add(30 * time.Second))
	get, err := http.NewRequest(http.MethodGet, "http://d/v4.0.0/libpod/containers/"+url.PathEscape(name)+"/json", nil)
	if err != nil {
		return ctr, err
	}
	get.Close = true
	if err := get.Write(up); err != nil {
		return ctr, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(up), get)
	if err != nil {
		return ctr, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return ctr, fmt.Errorf("podman answers %s", resp.Status)
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&ctr); err != nil {
		return ctr, err
	}
	if len(ctr.ID) != 64 || strings.Trim(ctr.ID, "0123456789abcdef") != "" {
		return ctr, fmt.Errorf("podman names the container %q", ctr.ID)
	}
	return ctr, nil
}

// maxSecretBody bounds a secret create's body: podman takes 512 000
// bytes of secret, base64 in JSON.
const maxSecretBody = 1 << 20

// secretDriver refuses a secret driver other than podman's own files, with
// options or none: the shell driver runs the client's commands on the
// engine's side (driveropts store=, lookup=), the pass driver runs pass
// and gpg there, and the file driver's path= writes where the client
// says.
func secretDriver(key string, values []string) *ocihook.Report {
	lower := strings.ToLower(key)
	for _, v := range values {
		switch {
		case strings.EqualFold(key, "driver") || key == "Driver.Name":
			if v != "" && v != "file" {
				return &ocihook.Report{Check: "secret", Field: "driver",
					Reason: fmt.Sprintf("the %q secret driver runs programs or writes files of the client's on the engine's side; use the default (file)", v)}
			}
		case strings.HasPrefix(lower, "driveropts") || strings.EqualFold(key, "driveropts"):
			if v != "" && v != "{}" && v != "null" {
				return &ocihook.Report{Check: "secret", Field: "driveropts",
					Reason: "a secret driver's options name programs or paths on the engine's side; create the secret without --driver-opts"}
			}
		}
	}
	return nil
}

// endpoint tells whether req's path ends in the segments want ("" matches
// any one segment, such as a name), as podman's router sees it: the
// escaped path (gorilla/mux's UseEncodedPath: a name "x%2Fy" is one
// segment) and the decoded one, both cleaned, are judged.
func endpoint(req *http.Request, want ...string) bool {
	return endsIn(req.URL.Path, want) || endsIn(req.URL.EscapedPath(), want)
}

// endpointAll is endpoint in both views of the path.
func endpointAll(req *http.Request, want ...string) bool {
	return endsIn(req.URL.Path, want) && endsIn(req.URL.EscapedPath(), want)
}

func endsIn(p string, want []string) bool {
	segs := strings.Split(strings.Trim(path.Clean("/"+p), "/"), "/")
	if len(segs) < len(want) {
		return false
	}
	tail := segs[len(segs)-len(want):]
	for i, w := range want {
		if w != "" && tail[i] != w {
			return false
		}
	}
	return true
}

// maxJSONBody bounds the JSON bodies the filter reads (a container's
// create request: its environment, labels and mounts).
const maxJSONBody = 4 << 20

// bodyRefusal reads the JSON body of the requests that name, in it, what
// podman then does on the engine's side, and refuses those (nil: go on,
// the body passed on as it was read):
//   - kube play: a PersistentVolumeClaim's volume.podman.io annotations
//     make a volume with mount options (below); YAML cannot be read here
//     as podman reads it, so kube play is not offered;
//   - a volume's type, device and o options: podman mounts what they say,
//     on its side, before any hook (mount.fuse3 ran the program the device
//     named, as the engine's root with every capability of its
//     namespace), and a driver other than the local one;
//   - a container's log path and conmon pid file: conmon, the engine's
//     root, writes them wherever they say (a log path of
//     /proc/sys/kernel/core_pattern set the host's under a root
//     supervisor); no hook sees either, for neither is in the container's
//     OCI configuration.
//
// Keys are matched as encoding/json matches a struct's fields (folded),
// and at every depth for a container's, so that an object podman reads
// is found wherever it sits.
func bodyRefusal(req *http.Request) *ocihook.Report {
	var check func(any) *ocihook.Report
	switch {
	case endpoint(req, "play", "kube") || endpoint(req, "kube", "play"):
		if req.Method == http.MethodDelete {
			return nil
		}
		return &ocihook.Report{Check: "kube", Field: "play",
			Reason: "podman kube play is not offered: a claim's volume.podman.io annotations make the engine mount what the YAML names, with a mount helper that runs a program; start the containers with podman run, or docker compose"}
	case endpoint(req, "volumes", "create"):
		check = volumeRefusal
	case endpoint(req, "containers", "create") || endpoint(req, "pods", "create"):
		check = createRefusal
	default:
		return nil
	}
	if req.Body == nil || req.Body == http.NoBody {
		return nil
	}
	body, err := io.ReadAll(io.LimitReader(req.Body, maxJSONBody+1))
	if err != nil || len(body) > maxJSONBody {
		return &ocihook.Report{Check: "request", Field: "body", Reason: fmt.Sprintf("a create request must be whole and under %d MiB", maxJSONBody>>20)}
	}
	var v any
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return &ocihook.Report{Check: "request", Field: "body", Reason: "a create request whose body is not JSON (" + err.Error() + ")"}
	}
	// podman decodes into structs and maps, where a key given twice
	// merges into the first (its options stay); a map keeps the last.
	// A body with a key twice, folded as podman folds them, is refused.
	if k, dup := duplicateKey(body); dup {
		return &ocihook.Report{Check: "request", Field: "body", Reason: fmt.Sprintf("a create request that gives the key %q twice in one object; give each once", k)}
	}
	if r := check(v); r != nil {
		return r
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	req.ContentLength = int64(len(body))
	req.TransferEncoding = nil
	return nil
}

// volumeOptions are the local driver's options that podman turns into a
// mount on its side (mount -t TYPE -o O DEVICE).
var volumeOptions = []string{"type", "device", "o"}

// volumeRefusal judges a volume's create body: libpod's (Driver, Options)
// and the Docker API's (Driver, DriverOpts).
func volumeRefusal(v any) *ocihook.Report {
	obj, _ := v.(map[string]any)
	for k, val := range obj {
		switch {
		case strings.EqualFold(k, "Driver"):
			if d, _ := val.(string); d != "" && !strings.EqualFold(d, "local") {
				return &ocihook.Report{Check: "volume", Field: "driver",
					Reason: fmt.Sprintf("volume driver %q: only the local driver is offered", d)}
			}
		case strings.EqualFold(k, "Options"), strings.EqualFold(k, "DriverOpts"):
			opts, _ := val.(map[string]any)
			for o := range opts {
				for _, bad := range volumeOptions {
					if strings.EqualFold(o, bad) {
						return &ocihook.Report{Check: "volume", Field: "options." + o,
							Reason: "a volume's type, device and o options make the engine mount what they name, on its side (mount.fuse runs the program the device names); make a plain volume (no --opt type, device or o)"}
					}
				}
			}
		}
	}
	return nil
}

// createRefusal looks, at every depth of a container's (or a pod's)
// create body, for libpod's log_configuration.path (and a "path" among
// its options), the Docker API's HostConfig.LogConfig.Config "path", and
// libpod's conmon_pid_file.
func createRefusal(v any) *ocihook.Report {
	var r *ocihook.Report
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case []any:
			for _, e := range v {
				walk(e)
			}
		case map[string]any:
			for k, val := range v {
				if r != nil {
					return
				}
				switch {
				case strings.EqualFold(k, "log_configuration"), strings.EqualFold(k, "LogConfig"):
					if logPath(val) {
						r = &ocihook.Report{Check: "log", Field: k,
							Reason: "a container's log path is a file the engine's conmon writes wherever it names, on the engine's side; leave it to the engine (no --log-opt path=)"}
					}
				case strings.Contains(strings.ToLower(k), "pid_file") || strings.EqualFold(k, "pidfile"):
					// conmon_pid_file, infra_conmon_pid_file: conmon
					// writes its pid there.
					if s, _ := val.(string); s != "" {
						r = &ocihook.Report{Check: "log", Field: k,
							Reason: "a pid file is a path the engine writes on its side; leave it out (no --conmon-pidfile, --infra-conmon-pidfile)"}
					}
				}
				walk(val)
			}
		}
	}
	walk(v)
	return r
}

// logPath tells a log configuration that names a path: libpod's {path,
// options: {path}} or the Docker API's {Config: {path}}, keys folded.
func logPath(v any) bool {
	obj, _ := v.(map[string]any)
	for k, val := range obj {
		switch {
		case strings.EqualFold(k, "path"):
			if s, _ := val.(string); s != "" {
				return true
			}
		case strings.EqualFold(k, "options"), strings.EqualFold(k, "Config"):
			// podman joins each entry into KEY=VALUE and splits it at
			// the first "=" again: a key "path=/x" names the path too.
			opts, _ := val.(map[string]any)
			for o := range opts {
				if key, _, _ := strings.Cut(o, "="); strings.EqualFold(key, "path") {
					return true
				}
			}
		}
	}
	return false
}

// duplicateKey finds a key that one object of the JSON document body
// gives twice, names folded (strings.EqualFold, as encoding/json matches
// a struct's fields), at any depth.
func duplicateKey(body []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	// Each open object's keys seen, folded, and whether the next token
	// of that object is a key.
	type object struct {
		seen  map[string]bool
		isKey bool
	}
	var stack []*object
	for {
		t, err := dec.Token()
		if err != nil {
			return "", false // the end, or what the decode above refused
		}
		var top *object
		if len(stack) > 0 {
			top = stack[len(stack)-1]
		}
		switch t := t.(type) {
		case json.Delim:
			switch t {
			case '{':
				if top != nil && !top.isKey {
					top.isKey = true // the object is a value
				}
				stack = append(stack, &object{seen: map[string]bool{}, isKey: true})
				continue
			case '[':
				if top != nil && !top.isKey {
					top.isKey = true
				}
				stack = append(stack, nil)
				continue
			case '}', ']':
				stack = stack[:len(stack)-1]
				continue
			}
		case string:
			if top != nil && top.isKey {
				k := strings.ToLower(strings.ToUpper(t)) // folded as EqualFold folds: K, ſ
				if top.seen[k] {
					return t, true
				}
				top.seen[k] = true
				top.isKey = false
				continue
			}
		}
		if top != nil {
			top.isKey = true // a value: the next token is a key
		}
	}
}
