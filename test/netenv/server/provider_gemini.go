package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
)

// The Gemini API (generativelanguage.googleapis.com) as the Gemini CLI
// calls it: POST /v1beta/models/<model>:streamGenerateContent?alt=sse for
// every turn, :generateContent for its side requests (routing, next
// speaker, titles), :countTokens, and GET /v1beta/models. Every answer is
// the canned reply.
func init() {
	handle(isGemini, serveGemini)
}

// isGemini matches the Gemini API's paths, under any prefix (not its
// OpenAI-compatible endpoint, /v1beta/openai/).
func isGemini(path string) bool {
	return (strings.Contains(path, "/v1beta/") || strings.Contains(path, "/v1alpha/")) &&
		!strings.Contains(path, "/openai/")
}

const geminiUsage = `{"promptTokenCount":10,"candidatesTokenCount":5,"totalTokenCount":15}`

func serveGemini(w http.ResponseWriter, r *http.Request, body []byte) {
	path := r.URL.Path
	_, method, _ := strings.Cut(path[strings.LastIndex(path, "/")+1:], ":")
	model := geminiModel(path)
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.Method == http.MethodGet && method == "":
		if strings.HasSuffix(path, "/models") {
			fmt.Fprintf(w, `{"models":[%s]}`, geminiModelInfo("gemini-2.5-pro"))
		} else {
			fmt.Fprint(w, geminiModelInfo(model))
		}
	case method == "countTokens":
		fmt.Fprint(w, `{"totalTokens":10}`)
	case method == "embedContent":
		fmt.Fprint(w, `{"embedding":{"values":[0.1,0.2,0.3]}}`)
	case method == "batchEmbedContents":
		fmt.Fprint(w, `{"embeddings":[{"values":[0.1,0.2,0.3]}]}`)
	case method == "generateContent":
		fmt.Fprint(w, geminiResponse(geminiText(body), model))
	case method == "streamGenerateContent":
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		fl, _ := w.(http.Flusher)
		// Two chunks, as the real API streams the text in parts; the
		// finish reason and usage come with the last.
		first, _ := json.Marshal(map[string]any{
			"candidates":   []any{map[string]any{"content": map[string]any{"role": "model", "parts": []any{map[string]any{"text": CannedReply[:12]}}}, "index": 0}},
			"modelVersion": model,
		})
		fmt.Fprintf(w, "data: %s\r\n\r\n", first)
		if fl != nil {
			fl.Flush()
		}
		last, _ := json.Marshal(map[string]any{
			"candidates":    []any{map[string]any{"content": map[string]any{"role": "model", "parts": []any{map[string]any{"text": CannedReply[12:]}}}, "finishReason": "STOP", "index": 0}},
			"usageMetadata": json.RawMessage(geminiUsage),
			"modelVersion":  model,
		})
		fmt.Fprintf(w, "data: %s\r\n\r\n", last)
		if fl != nil {
			fl.Flush()
		}
	default:
		http.NotFound(w, r)
	}
}

// geminiModel is the model in .../models/<model>[:method], or a default.
func geminiModel(path string) string {
	_, m, ok := strings.Cut(path, "/models/")
	if !ok || m == "" {
		return "gemini-2.5-pro"
	}
	m, _, _ = strings.Cut(m, ":")
	return m
}

func geminiModelInfo(model string) string {
	b, _ := json.Marshal(map[string]any{
		"name": "models/" + model, "baseModelId": model, "version": "001", "displayName": model,
		"inputTokenLimit": 1048576, "outputTokenLimit": 65536,
		"supportedGenerationMethods": []string{"generateContent", "countTokens"},
	})
	return string(b)
}

// geminiText is the text of a non-streamed answer. The CLI asks some of its
// side questions with a JSON response schema (which model should answer,
// who speaks next); those get JSON that parses, the rest the canned reply.
func geminiText(body []byte) string {
	var req struct {
		GenerationConfig struct {
			ResponseMimeType string `json:"responseMimeType"`
		} `json:"generationConfig"`
	}
	json.Unmarshal(body, &req)
	if req.GenerationConfig.ResponseMimeType == "application/json" {
		b, _ := json.Marshal(map[string]any{
			"reasoning": CannedReply, "model_choice": "flash", "next_speaker": "user", "summary": CannedReply,
			"complexity_reasoning": CannedReply, "complexity_score": 10,
		})
		return string(b)
	}
	return CannedReply
}

func geminiResponse(text, model string) string {
	b, _ := json.Marshal(map[string]any{
		"candidates":    []any{map[string]any{"content": map[string]any{"role": "model", "parts": []any{map[string]any{"text": text}}}, "finishReason": "STOP", "index": 0}},
		"usageMetadata": json.RawMessage(geminiUsage),
		"modelVersion":  model,
	})
	return string(b)
}
