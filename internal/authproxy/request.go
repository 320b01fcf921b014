package authproxy

import (
	"crypto/subtle"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"

	"github.com/stockade-dev/stockade/internal/sandboxnet"
)

// denial is a refused request: what the agent is told and what is logged.
type denial struct {
	status int
	reason string // for the audit log and X-Stockade-Denied
	body   string // for the agent: what to do instead
}

// admit checks a request in order: form, Host, route, path, key. It returns
// the route and the path after /<route> (escaped), or why it is refused.
func (p *Proxy) admit(r *http.Request) (*route, string, *denial) {
	usage := func() string {
		return fmt.Sprintf("use http://%s/<route>/… with one of: %s", p.localAddr(r), strings.Join(p.names, ", "))
	}
	switch {
	case r.Method == http.MethodConnect:
		return nil, "", &denial{http.StatusMethodNotAllowed, "CONNECT", "this is not an HTTP proxy; " + usage()}
	case !strings.HasPrefix(r.RequestURI, "/"):
		return nil, "", &denial{http.StatusMethodNotAllowed, "absolute-form request", "this is not an HTTP proxy; " + usage()}
	case p.onSocket(r):
		// Routed by Host: the request is put in the route form the rest
		// of the checks (and rewrite) read.
		name, ok := p.cfg.HostRoutes[strings.ToLower(r.Host)]
		if !ok {
			return nil, "", &denial{http.StatusMisdirectedRequest, "foreign Host header",
				"this socket serves only " + strings.Join(slices.Sorted(maps.Keys(p.cfg.HostRoutes)), ", ")}
		}
		r.URL.Path = "/" + name + r.URL.Path
		if r.URL.RawPath != "" {
			r.URL.RawPath = "/" + name + r.URL.RawPath
		}
	case !p.hostAllowed(r):
		// A page in a browser inside the sandbox could reach us by a name
		// that resolves to 127.0.0.1 (DNS rebinding); only our own address
		// is a Host we answer for.
		return nil, "", &denial{http.StatusMisdirectedRequest, "foreign Host header", usage()}
	}
	esc := r.URL.EscapedPath()
	name, rest, ok := strings.Cut(strings.TrimPrefix(esc, "/"), "/")
	prov, known := LookupProvider(name)
	rt := p.routes[prov.Name]
	if !ok || !known || rt == nil {
		return nil, esc, &denial{http.StatusNotFound, "unknown route", "no such route; " + usage()}
	}
	path := "/" + rest
	for seg := range strings.SplitSeq(r.URL.Path, "/") {
		if seg == "." || seg == ".." {
			return rt, path, &denial{http.StatusBadRequest, "dot segment in path", "the path may not contain . or .. segments"}
		}
	}
	if reason := rt.checkKey(r, p.cfg.Dummy, p.routes); reason != "" {
		want := make([]string, len(rt.prov.Accept))
		for i, s := range rt.prov.Accept {
			want[i] = s.String()
		}
		return rt, path, &denial{http.StatusUnauthorized, reason, fmt.Sprintf(
			"the %s route needs the sandbox's key %q in %s; real keys stay outside the sandbox",
			rt.prov.Name, p.cfg.Dummy, strings.Join(want, " or "))}
	}
	return rt, path, nil
}

// localAddr is the address the request came in on, "127.0.0.1:2376" inside
// the sandbox.
func (p *Proxy) localAddr(r *http.Request) string {
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		return a.String()
	}
	return sandboxnet.AuthAddr
}

// onSocket reports whether r came in on a unix socket (Config.HostRoutes).
func (p *Proxy) onSocket(r *http.Request) bool {
	a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	return ok && a.Network() == "unix"
}

func (p *Proxy) hostAllowed(r *http.Request) bool {
	local := p.localAddr(r)
	host := strings.ToLower(r.Host)
	if host == local {
		return true
	}
	_, port, err := net.SplitHostPort(local)
	return err == nil && host == "localhost:"+port
}

// checkKey returns "" when every key the request carries is the dummy and
// one is where the route accepts it; otherwise why not.
func (rt *route) checkKey(r *http.Request, dummy string, all map[string]*route) string {
	type found struct {
		style Style
		value string
	}
	var keys []found
	for _, v := range r.Header.Values("X-Api-Key") {
		keys = append(keys, found{XAPIKey, v})
	}
	for _, v := range r.Header.Values("X-Goog-Api-Key") {
		keys = append(keys, found{GoogAPIKey, v})
	}
	for _, v := range r.Header.Values("Authorization") {
		scheme, token, _ := strings.Cut(v, " ")
		style := Bearer
		switch {
		case strings.EqualFold(scheme, "token"):
			style = Token
		case !strings.EqualFold(scheme, "Bearer"):
			token = v // another scheme (Basic, …) is never the dummy
		}
		keys = append(keys, found{style, strings.TrimSpace(token)})
	}
	if slices.Contains(rt.prov.Accept, QueryKey) {
		vals, _ := queryKeys(r.URL.RawQuery)
		for _, v := range vals {
			keys = append(keys, found{QueryKey, v})
		}
	}
	if len(keys) == 0 {
		return "no key"
	}
	accepted := false
	for _, k := range keys {
		if k.value != dummy {
			for _, other := range all {
				if subtle.ConstantTimeCompare([]byte(k.value), []byte(other.Key)) == 1 {
					return "a real key from outside the sandbox (" + other.prov.Name + "): it has leaked into the sandbox"
				}
			}
			return "wrong key in " + k.style.String()
		}
		accepted = accepted || slices.Contains(rt.prov.Accept, k.style)
	}
	if !accepted {
		return "dummy key in a header this route does not accept"
	}
	return ""
}

// queryKeys returns the values of the "key" parameters of a raw query and
// the query without them, leaving every other parameter as it was written.
func queryKeys(raw string) (vals []string, rest string) {
	if raw == "" {
		return nil, ""
	}
	var kept []string
	for pair := range strings.SplitSeq(raw, "&") {
		k, v, _ := strings.Cut(pair, "=")
		if uk, err := url.QueryUnescape(k); err == nil && uk == "key" || k == "key" {
			if uv, err := url.QueryUnescape(v); err == nil {
				v = uv
			}
			vals = append(vals, v)
			continue
		}
		kept = append(kept, pair)
	}
	return vals, strings.Join(kept, "&")
}

// refuse answers a refused request and records it.
func (p *Proxy) refuse(w http.ResponseWriter, r *http.Request, rt *route, path string, d *denial) {
	if path == "" { // refused before the route: CONNECT, absolute-form, Host
		path = r.URL.EscapedPath()
	}
	f := map[string]any{"method": r.Method, "path": logPath(path), "reason": d.reason}
	if rt != nil {
		f["provider"] = rt.prov.Name
	} else {
		f["host"] = r.Host // validated by net/http: printable
	}
	p.cfg.Audit(EventDenied, f)
	h := w.Header()
	h.Set("Content-Type", "text/plain; charset=utf-8")
	h.Set("X-Stockade-Denied", d.reason)
	h.Set("Connection", "close")
	w.WriteHeader(d.status)
	fmt.Fprintf(w, "stockade auth proxy: %s: %s\n", d.reason, d.body)
}

// rewrite turns the agent's request into the upstream's. It runs after
// ReverseProxy removed the hop-by-hop headers and X-Forwarded-*.
func (rt *route) rewrite(pr *httputil.ProxyRequest) {
	in, out := pr.In, pr.Out
	// The route's upstream, never a host the agent chose.
	esc := in.URL.EscapedPath()
	seg, _, _ := strings.Cut(strings.TrimPrefix(esc, "/"), "/")
	up := rt.Upstream
	out.URL = &url.URL{
		Scheme:   up.Scheme,
		Host:     up.Host,
		Path:     up.Path + strings.TrimPrefix(in.URL.Path, "/"+seg),
		RawPath:  up.EscapedPath() + strings.TrimPrefix(esc, "/"+seg),
		RawQuery: in.URL.RawQuery,
	}
	out.Host = "" // the Host header is the upstream's
	if slices.Contains(rt.prov.Accept, QueryKey) {
		_, out.URL.RawQuery = queryKeys(in.URL.RawQuery)
	}
	h := out.Header
	for name := range h {
		if droppedRequestHeader(name) {
			delete(h, name)
		}
	}
	switch rt.Style {
	case XAPIKey:
		h.Set("X-Api-Key", rt.Key)
	case Bearer:
		h.Set("Authorization", "Bearer "+rt.Key)
	case Token:
		h.Set("Authorization", "token "+rt.Key)
	case GoogAPIKey:
		// In a header, never in ?key=: URLs end up in error messages and logs.
		h.Set("X-Goog-Api-Key", rt.Key)
	}
}

// modifyResponse scrubs the real key out of the response, or refuses an
// answer that the scrubber cannot read (checkAnswer).
func (rt *route) modifyResponse(resp *http.Response) error {
	if resp.StatusCode == http.StatusSwitchingProtocols { // a hijacked stream stays as it is
		scrubHeader(resp.Header, rt.Key)
		return nil
	}
	if err := checkAnswer(resp); err != nil {
		return err
	}
	scrubHeader(resp.Header, rt.Key)
	resp.Body = newScrubber(resp.Body, rt.Key)
	return nil
}

// upstreamError answers 502 when the upstream cannot be reached. The error
// names the upstream URL, which never holds a key. An answer checkAnswer
// refused is left to ServeHTTP, which refuses it like a request.
func (rt *route) upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	sw, _ := w.(*responseWriter)
	if d := asRefusedAnswer(err); d != nil && sw != nil {
		sw.refused = d
		return
	}
	if sw != nil {
		sw.err = err
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(http.StatusBadGateway)
	fmt.Fprintf(w, "stockade auth proxy: the %s upstream (%s) did not answer\n", rt.prov.Name, rt.Upstream.Host)
}

// logPath bounds a path for the audit log (it is escaped, so printable).
func logPath(p string) string {
	const max = 512
	if len(p) > max {
		return p[:max] + "…"
	}
	return p
}
