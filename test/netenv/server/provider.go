package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
)

// CannedReply is what the fake provider answers every prompt with; the
// agent tests look for it in the CLI's output.
const CannedReply = "CANNED-REPLY-FROM-THE-FAKE-PROVIDER"

// provider is a fake model provider: it records the key and model of every
// request in a log (so a test can check that the real key arrived and the
// placeholder did not) and answers with a canned reply in the API's own
// streaming format. The Anthropic Messages API is here; other APIs register
// a handler for their paths with handle, each in a file of its own.
type provider struct {
	mu  sync.Mutex
	log string // file: one JSON object per request
}

// api is one fake API: the requests whose path it matches, and its answer
// (body is the request body, already read).
type api struct {
	match func(path string) bool
	serve func(w http.ResponseWriter, r *http.Request, body []byte)
}

var apis []api

// handle registers a fake API (from init functions).
func handle(match func(path string) bool, serve func(w http.ResponseWriter, r *http.Request, body []byte)) {
	apis = append(apis, api{match, serve})
}

func (p *provider) record(r *http.Request, body []byte) {
	var req struct {
		Model  string `json:"model"`
		Stream bool   `json:"stream"`
	}
	json.Unmarshal(body, &req)
	line, _ := json.Marshal(map[string]any{
		"path": r.URL.Path, "x_api_key": r.Header.Get("x-api-key"),
		"authorization": r.Header.Get("Authorization"), "x_goog_api_key": r.Header.Get("x-goog-api-key"),
		"query_key": r.URL.Query().Get("key"), "model": req.Model, "stream": req.Stream,
	})
	p.mu.Lock()
	defer p.mu.Unlock()
	if f, err := os.OpenFile(p.log, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err == nil {
		f.Write(append(line, '\n'))
		f.Close()
	}
}

func (p *provider) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	p.record(r, body)
	for _, a := range apis {
		if a.match(r.URL.Path) {
			a.serve(w, r, body)
			return
		}
	}
	if !strings.HasSuffix(r.URL.Path, "/v1/messages") {
		if strings.HasSuffix(r.URL.Path, "/count_tokens") {
			io.WriteString(w, `{"input_tokens": 10}`)
			return
		}
		http.NotFound(w, r)
		return
	}
	var req struct {
		Model  string `json:"model"`
		Stream bool   `json:"stream"`
	}
	json.Unmarshal(body, &req)
	if req.Model == "" {
		req.Model = "claude-fake"
	}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"msg_fake","type":"message","role":"assistant","model":%q,"content":[{"type":"text","text":%q}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":5}}`, req.Model, CannedReply)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	fl, _ := w.(http.Flusher)
	event := func(name, data string) {
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, data)
		if fl != nil {
			fl.Flush()
		}
	}
	event("message_start", fmt.Sprintf(`{"type":"message_start","message":{"id":"msg_fake","type":"message","role":"assistant","model":%q,"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":1}}}`, req.Model))
	event("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
	for _, part := range []string{CannedReply[:12], CannedReply[12:]} {
		event("content_block_delta", fmt.Sprintf(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":%q}}`, part))
	}
	event("content_block_stop", `{"type":"content_block_stop","index":0}`)
	event("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":5}}`)
	event("message_stop", `{"type":"message_stop"}`)
}
