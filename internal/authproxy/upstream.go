package authproxy

import (
	"errors"
	"fmt"
	"net/url"
	"strings"
)

// ParseUpstream parses the value of --upstream ROUTE=URL. The route may be
// an alias; the canonical name is returned. The URL must be https, or http
// when allowHTTP (the user asked for plain http: a loosening the caller
// prints and records). Credentials, a query or a fragment in the URL are
// refused: the key belongs in the key variables, never in a URL that ends
// up in error messages. Errors never repeat the URL.
func ParseUpstream(s string, allowHTTP bool) (route string, u *url.URL, err error) {
	name, raw, ok := strings.Cut(s, "=")
	if !ok || name == "" || raw == "" {
		return "", nil, errors.New("parsing --upstream: want ROUTE=URL, e.g. anthropic=https://llm-gateway.example.com")
	}
	p, ok := LookupProvider(name)
	if !ok {
		return "", nil, fmt.Errorf("parsing --upstream: unknown route %q; known routes: %s", name, strings.Join(Names(), ", "))
	}
	u, err = parseUpstreamURL(raw, allowHTTP)
	if err != nil {
		return "", nil, fmt.Errorf("parsing --upstream for %s: %w", p.Name, err)
	}
	return p.Name, u, nil
}

// parseUpstreamURL checks an upstream base URL and drops a trailing slash.
func parseUpstreamURL(raw string, allowHTTP bool) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, errors.New("not a URL")
	}
	if err := checkUpstream(u, allowHTTP); err != nil {
		return nil, err
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawPath = strings.TrimSuffix(u.RawPath, "/")
	return u, nil
}

// checkUpstream is the check ParseUpstream and New share.
func checkUpstream(u *url.URL, allowHTTP bool) error {
	switch {
	case u.User != nil:
		return errors.New("credentials in the URL are refused; put the key in the key variable (stockaderc)")
	case u.Scheme == "http" && !allowHTTP:
		return errors.New("plain http is refused: the key would cross the network in clear; use https, or allow http explicitly")
	case u.Scheme != "https" && u.Scheme != "http":
		return errors.New("the scheme must be https")
	case u.Host == "" || u.Opaque != "" || u.Hostname() == "":
		return errors.New("the URL has no host")
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return errors.New("a query or fragment is refused in an upstream URL")
	}
	return nil
}
