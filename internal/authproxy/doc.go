// Package authproxy keeps the real API keys out of the sandbox (docs/authproxy.md).
// The agent holds a dummy key (sk-proxy) and a base URL on a loopback
// listener inside its network namespace; the supervisor, outside, serves
// that listener with a Proxy that checks the dummy, swaps in the real key
// and forwards to the provider's fixed upstream, streaming the answer.
//
// # Using it
//
//	env := rcfile.Merge(hostEnv, global, project, envFile)  // real keys
//	route, u, err := authproxy.ParseUpstream(flag, allowHTTP) // each --upstream
//	routes := authproxy.RoutesFromEnv(env, upstreams)
//	p, err := authproxy.New(authproxy.Config{
//		Routes: routes,
//		Audit:  func(ev string, f map[string]any) { w.Log(audit.SourceAuthProxy, ev, f) },
//	})
//	go p.Serve(ln) // ln: sandboxnet.AuthAddr, created by init inside the namespace
//	sandboxEnv := authproxy.SandboxEnv(routes, sandboxnet.AuthURL, sandboxnet.DummyKey)
//	...
//	p.Close() // waits for streams, up to ShutdownTimeout
//
// # What a request goes through
//
//  1. CONNECT and absolute-form requests: 405 (this is not an HTTP proxy).
//  2. A Host header other than the listener's own address or localhost:PORT:
//     421 (DNS rebinding from a browser in the sandbox).
//  3. The first path segment must be a configured route (or an alias, e.g.
//     gemini for google): else 404 naming the routes. . and .. segments: 400.
//  4. Every key the request carries (x-api-key, Authorization, x-goog-api-key,
//     and ?key= on the google route) must be the dummy, and one must be
//     where the route accepts it (Provider.Accept): else 401. A request that
//     carries a real key is refused too, and the audit event says the key
//     has leaked into the sandbox.
//  5. The request goes to the route's upstream only: path after /<route>
//     joined to the upstream's path, Host set to the upstream's, every key
//     header and ?key= removed, the real key set in the route's one header,
//     Proxy-*, Forwarded, X-Forwarded-*, X-Real-Ip, Accept-Encoding (the
//     transport then asks for gzip itself and decompresses) and Range,
//     If-Range, Request-Range (a part could hold a part of the key) dropped.
//  6. The response streams back through httputil.ReverseProxy with
//     FlushInterval -1: each chunk is flushed as it arrives, so SSE works.
//     Any header whose name or value contains the real key is dropped (also
//     trailers and 1xx), and the key is masked with '*' in the body, as it
//     streams; only a tail that could be the start of the key is held back,
//     and released only at a clean end. An answer the scrubber cannot read
//     as the agent will (206, Content-Range, multipart/byteranges, or a
//     Content-Encoding the transport did not decode) is refused with 502.
//  7. One audit event: auth_request {provider, method, path, status, model,
//     request_bytes, response_bytes, duration_ms, error} or auth_denied
//     {provider or host, method, path, reason}. The model is the top-level
//     "model" of a JSON body (the first 1 MiB, put back unchanged), or the
//     name after /models/ in the path.
//
// # Limits
//
// The body scrubber sees the key only as written: a base64 or otherwise
// encoded echo of it is not caught, nor is anything inside an upgraded
// (101) connection. Close waits for requests in flight but not for upgraded
// connections. The anthropic route sends a CLAUDE_CODE_OAUTH_TOKEN as a
// bearer token; Claude Code itself adds the OAuth beta header.
package authproxy
