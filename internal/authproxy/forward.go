package authproxy

import (
	"errors"
	"net/http"
	"strings"
)

// droppedRequestHeaders are removed from every request on its way to the
// upstream (lower case), besides the hop-by-hop headers ReverseProxy
// removes itself, each for its reason.
var droppedRequestHeaders = map[string]string{
	"authorization":  "a key header: the real key is set in the route's one header",
	"x-api-key":      "a key header",
	"x-goog-api-key": "a key header",
	"forwarded":      "says where the request came from",
	"x-real-ip":      "says where the request came from",
	// Without the agent's Accept-Encoding the transport asks for gzip itself
	// and decompresses, so the scrubber reads the body as the agent will.
	"accept-encoding": "would let the agent choose an encoding the scrubber cannot read",
	// An upstream that echoes the key and honours a range would hand it
	// out in pieces shorter than the key, and no piece holds the whole key
	// the scrubber looks for.
	"range":         "asks for a part of the answer",
	"if-range":      "asks for a part of the answer (with Range)",
	"request-range": "Range's pre-RFC 2616 name, still honoured by some servers",
}

// droppedRequestPrefixes are removed like droppedRequestHeaders.
var droppedRequestPrefixes = map[string]string{
	"proxy-":       "meant for a proxy, never for the upstream",
	"x-forwarded-": "says where the request came from",
}

// droppedRequestHeader reports whether a request header never reaches the
// upstream.
func droppedRequestHeader(name string) bool {
	l := strings.ToLower(name)
	if _, ok := droppedRequestHeaders[l]; ok {
		return true
	}
	for prefix := range droppedRequestPrefixes {
		if strings.HasPrefix(l, prefix) {
			return true
		}
	}
	return false
}

// refusedAnswer is what modifyResponse returns for an answer the agent must
// not get; upstreamError turns it into a refusal.
type refusedAnswer struct{ denial }

func (r *refusedAnswer) Error() string { return r.reason }

// checkAnswer refuses an answer whose body the scrubber cannot read as the
// agent will: then a key in it would pass unmasked.
//
//   - A part of a representation (206, Content-Range, multipart/byteranges):
//     the proxy never asks for one, so an upstream that sends one anyway
//     could be handing out a key in pieces.
//   - A body the transport did not decode (any Content-Encoding left: one it
//     did not ask for, such as br, deflate, x-gzip, or gzip twice): the
//     scrubber would see compressed bytes, the agent would decompress them.
//
// A bodiless answer (HEAD, 204, 304) may keep its Content-Encoding: it
// describes a body that is not there.
func checkAnswer(resp *http.Response) error {
	partial := &refusedAnswer{denial{http.StatusBadGateway, "partial content from the upstream",
		"the upstream sent a part of its answer (206, Content-Range or multipart/byteranges), which the auth proxy never asks for and does not pass on, since a part could hold a part of the real key; ask for the whole answer"}}
	encoded := &refusedAnswer{denial{http.StatusBadGateway, "encoded answer the transport did not decode",
		"the upstream sent its answer in an encoding the auth proxy did not ask for (Content-Encoding other than the gzip it decodes), so it cannot be checked for the real key and is not passed on"}}
	ct := strings.ToLower(strings.TrimSpace(resp.Header.Get("Content-Type")))
	switch {
	case resp.StatusCode == http.StatusPartialContent, len(resp.Header.Values("Content-Range")) > 0,
		strings.HasPrefix(ct, "multipart/byteranges"):
		return partial
	case !hasBody(resp):
		return nil
	}
	for _, v := range resp.Header.Values("Content-Encoding") {
		for enc := range strings.SplitSeq(v, ",") {
			if enc = strings.TrimSpace(enc); enc != "" && !strings.EqualFold(enc, "identity") {
				return encoded
			}
		}
	}
	return nil
}

// hasBody reports whether an answer can carry a body (RFC 9110 §6.4.1).
func hasBody(resp *http.Response) bool {
	if resp.Request != nil && resp.Request.Method == http.MethodHead {
		return false
	}
	return resp.StatusCode >= 200 && resp.StatusCode != http.StatusNoContent && resp.StatusCode != http.StatusNotModified
}

// asRefusedAnswer returns the denial in err, or nil.
func asRefusedAnswer(err error) *denial {
	var r *refusedAnswer
	if errors.As(err, &r) {
		return &r.denial
	}
	return nil
}
