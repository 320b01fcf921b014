package authproxy

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
)

// maxSniff is how much of a request body is read to find its "model".
const maxSniff = 1 << 20

// requestModel returns the model a request asks for: the top-level "model"
// of a JSON body (read up to maxSniff bytes, then put back in front of the
// rest, so the upstream gets the body unchanged), else the name after
// /models/ in the path (Google: /v1beta/models/NAME:generateContent).
func requestModel(r *http.Request, path string) string {
	m := ""
	if r.Body != nil && r.Body != http.NoBody && strings.Contains(r.Header.Get("Content-Type"), "json") {
		buf, _ := io.ReadAll(io.LimitReader(r.Body, maxSniff)) // a read error comes again to the transport
		r.Body = replayBody{io.MultiReader(bytes.NewReader(buf), r.Body), r.Body}
		m = jsonModel(buf)
	}
	if m == "" {
		if _, after, ok := strings.Cut(path, "/models/"); ok {
			m, _, _ = strings.Cut(after, ":")
			m, _, _ = strings.Cut(m, "/")
		}
	}
	return cleanModel(m)
}

type replayBody struct {
	io.Reader
	io.Closer
}

// jsonModel walks the top-level keys of a JSON object, which may be cut
// short, and returns the string value of "model".
func jsonModel(b []byte) string {
	dec := json.NewDecoder(bytes.NewReader(b))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return ""
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return ""
		}
		if t == "model" {
			var m string
			if dec.Decode(&m) != nil {
				return ""
			}
			return m
		}
		var skip json.RawMessage
		if dec.Decode(&skip) != nil {
			return ""
		}
	}
	return ""
}

// cleanModel keeps a model name fit for the audit log: printable ASCII,
// bounded. The agent chooses it.
func cleanModel(m string) string {
	const max = 128
	if len(m) > max {
		m = m[:max]
	}
	return strings.Map(func(r rune) rune {
		if r < ' ' || r > '~' {
			return '?'
		}
		return r
	}, m)
}
