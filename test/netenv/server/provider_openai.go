package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// The OpenAI API, as the Codex CLI and OpenAI-compatible clients use it:
// the Responses API (/v1/responses, what Codex speaks), Chat Completions
// (/v1/chat/completions) and the model list (/v1/models). Every answer is
// CannedReply, streamed as server-sent events when the request asks for a
// stream. The paths are matched at their end, after any route prefix.
func init() {
	handle(func(path string) bool { return strings.HasSuffix(path, "/v1/responses") }, openaiResponses)
	handle(func(path string) bool { return strings.HasSuffix(path, "/v1/chat/completions") }, openaiChat)
	handle(func(path string) bool { return strings.HasSuffix(path, "/v1/models") }, openaiModels)
}

// openaiRequest is what the fake reads of a request body.
type openaiRequest struct {
	Model  string `json:"model"`
	Stream bool   `json:"stream"`
}

func openaiParse(body []byte) openaiRequest {
	var req openaiRequest
	json.Unmarshal(body, &req)
	if req.Model == "" {
		req.Model = "gpt-fake"
	}
	return req
}

// openaiSSE starts an event stream; send writes one event (named when
// name is not "") with data marshaled as JSON, or as is when a string.
func openaiSSE(w http.ResponseWriter) (send func(name string, data any)) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	fl, _ := w.(http.Flusher)
	return func(name string, data any) {
		b, ok := data.(string)
		if !ok {
			j, _ := json.Marshal(data)
			b = string(j)
		}
		if name != "" {
			fmt.Fprintf(w, "event: %s\n", name)
		}
		fmt.Fprintf(w, "data: %s\n\n", b)
		if fl != nil {
			fl.Flush()
		}
	}
}

func openaiJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(v)
}

type openaiObj = map[string]any

// openaiResponses answers POST /v1/responses.
func openaiResponses(w http.ResponseWriter, r *http.Request, body []byte) {
	req := openaiParse(body)
	now := time.Now().Unix()
	usage := openaiObj{
		"input_tokens": 10, "input_tokens_details": openaiObj{"cached_tokens": 0},
		"output_tokens": 5, "output_tokens_details": openaiObj{"reasoning_tokens": 0}, "total_tokens": 15,
	}
	response := func(status string, output []any, usage any) openaiObj {
		return openaiObj{
			"id": "resp_fake", "object": "response", "created_at": now, "status": status,
			"model": req.Model, "output": output, "usage": usage, "error": nil,
			"incomplete_details": nil, "service_tier": "default",
		}
	}
	part := openaiObj{"type": "output_text", "text": CannedReply, "annotations": []any{}}
	done := openaiObj{"id": "msg_fake", "type": "message", "status": "completed", "role": "assistant", "content": []any{part}}
	if !req.Stream {
		openaiJSON(w, response("completed", []any{done}, usage))
		return
	}
	send := openaiSSE(w)
	seq := 0
	event := func(typ string, fields openaiObj) {
		fields["type"], fields["sequence_number"] = typ, seq
		seq++
		send(typ, fields)
	}
	event("response.created", openaiObj{"response": response("in_progress", []any{}, nil)})
	event("response.in_progress", openaiObj{"response": response("in_progress", []any{}, nil)})
	event("response.output_item.added", openaiObj{"output_index": 0,
		"item": openaiObj{"id": "msg_fake", "type": "message", "status": "in_progress", "role": "assistant", "content": []any{}}})
	event("response.content_part.added", openaiObj{"item_id": "msg_fake", "output_index": 0, "content_index": 0,
		"part": openaiObj{"type": "output_text", "text": "", "annotations": []any{}}})
	for _, d := range []string{CannedReply[:12], CannedReply[12:]} {
		event("response.output_text.delta", openaiObj{"item_id": "msg_fake", "output_index": 0, "content_index": 0, "delta": d, "logprobs": []any{}})
	}
	event("response.output_text.done", openaiObj{"item_id": "msg_fake", "output_index": 0, "content_index": 0, "text": CannedReply, "logprobs": []any{}})
	event("response.content_part.done", openaiObj{"item_id": "msg_fake", "output_index": 0, "content_index": 0, "part": part})
	event("response.output_item.done", openaiObj{"output_index": 0, "item": done})
	event("response.completed", openaiObj{"response": response("completed", []any{done}, usage)})
}

// openaiChat answers POST /v1/chat/completions.
func openaiChat(w http.ResponseWriter, r *http.Request, body []byte) {
	req := openaiParse(body)
	now := time.Now().Unix()
	usage := openaiObj{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15}
	if !req.Stream {
		openaiJSON(w, openaiObj{
			"id": "chatcmpl-fake", "object": "chat.completion", "created": now, "model": req.Model,
			"choices": []any{openaiObj{"index": 0, "finish_reason": "stop",
				"message": openaiObj{"role": "assistant", "content": CannedReply}}},
			"usage": usage,
		})
		return
	}
	send := openaiSSE(w)
	chunk := func(delta openaiObj, finish any, usage any) {
		c := openaiObj{
			"id": "chatcmpl-fake", "object": "chat.completion.chunk", "created": now, "model": req.Model,
			"choices": []any{openaiObj{"index": 0, "delta": delta, "finish_reason": finish}},
		}
		if usage != nil {
			c["usage"] = usage
		}
		send("", c)
	}
	chunk(openaiObj{"role": "assistant", "content": ""}, nil, nil)
	for _, d := range []string{CannedReply[:12], CannedReply[12:]} {
		chunk(openaiObj{"content": d}, nil, nil)
	}
	chunk(openaiObj{}, "stop", usage)
	send("", "[DONE]")
}

// openaiModels answers GET /v1/models, in OpenAI's list format; the
// empty "models" is Codex's own format (no remote model catalogue).
func openaiModels(w http.ResponseWriter, r *http.Request, body []byte) {
	var data []any
	for _, id := range []string{"gpt-5-codex", "gpt-5", "gpt-4o"} {
		data = append(data, openaiObj{"id": id, "object": "model", "created": 0, "owned_by": "openai"})
	}
	openaiJSON(w, openaiObj{"object": "list", "data": data, "models": []any{}})
}
