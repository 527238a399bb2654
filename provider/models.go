package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"
)

// ModelInfo is one model of a provider's own model list.
type ModelInfo struct {
	ID string `json:"id"`
	// ContextWindow is the model's window when the list says it (OpenRouter's
	// context_length, vLLM's max_model_len, Groq's context_window), else the known default
	// (ContextWindowOf), else 0.
	ContextWindow int    `json:"contextWindow,omitempty"`
	Name          string `json:"name,omitempty"` // a display name, when the list gives one
}

// maxModelList bounds the model list read from a server.
const maxModelList = 8 << 20

// ListModels asks the provider c configures for its model list: GET {baseUrl}/models for
// OpenAI-compatible servers (OpenAI, OpenRouter, Ollama, vLLM, llama.cpp, LM Studio), GET
// /v1/models for Anthropic. It is also how a connection is tested: it needs the address and
// the key to be right and costs no tokens. Errors are *Error, as a request's are.
func ListModels(ctx context.Context, c Config, opts *Options) ([]ModelInfo, error) {
	c, err := c.resolved(c.Kind)
	if err != nil {
		return nil, err
	}
	o := opts.orDefault()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	req, url, err := modelsRequest(ctx, c)
	if err != nil {
		return nil, &Error{Provider: c.Name, Message: err.Error(), Err: err}
	}
	resp, err := o.HTTPClient.Do(req)
	if err != nil {
		return nil, &Error{Provider: c.Name, Message: fmt.Sprintf("GET %s: %v", redactURL(url), err), Err: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxModelList))
	if err != nil {
		return nil, &Error{Provider: c.Name, Message: fmt.Sprintf("GET %s: %v", redactURL(url), err), Err: err}
	}
	if resp.StatusCode != http.StatusOK {
		return nil, modelsError(c.Name, url, resp.StatusCode, body)
	}
	out, err := parseModelList(body)
	if err != nil {
		return nil, &Error{Provider: c.Name, Message: fmt.Sprintf("GET %s: the answer is not a model list: %v", redactURL(url), err), Err: err}
	}
	return out, nil
}

// modelsRequest is the GET of the kind's model list, with the key where the kind wants it.
func modelsRequest(ctx context.Context, c Config) (*http.Request, string, error) {
	url := strings.TrimRight(c.BaseURL, "/") + "/models"
	if c.Kind == KindAnthropic {
		url = strings.TrimRight(c.BaseURL, "/") + "/v1/models?limit=1000"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, url, err
	}
	if key := c.APIKey.Reveal(); key != "" {
		if c.Kind == KindAnthropic {
			req.Header.Set("X-Api-Key", key)
		} else {
			req.Header.Set("Authorization", "Bearer "+key)
		}
	}
	if c.Kind == KindAnthropic {
		req.Header.Set("Anthropic-Version", "2023-06-01")
	}
	return req, url, nil
}

// modelsError is a failed status as an *Error: the server's own error message and type when
// it answers in OpenAI's or Anthropic's shape, else its answer cut to 300 bytes.
func modelsError(name, url string, status int, body []byte) *Error {
	msg := strings.TrimSpace(string(body))
	var e struct {
		Error struct {
			Message string `json:"message"`
			Type    string `json:"type"`
		} `json:"error"`
	}
	typ := ""
	if json.Unmarshal(body, &e) == nil && e.Error.Message != "" {
		msg, typ = e.Error.Message, e.Error.Type
	}
	if len(msg) > 300 {
		msg = msg[:300] + "…"
	}
	return &Error{Provider: name, Status: status, Type: typ, Message: fmt.Sprintf("GET %s: %s", redactURL(url), msg)}
}

// parseModelList reads a model list, sorted by id, leaving out models without one.
func parseModelList(body []byte) ([]ModelInfo, error) {
	var list struct {
		Data []struct {
			ID            string `json:"id"`
			Name          string `json:"name"`
			DisplayName   string `json:"display_name"`
			ContextLength int    `json:"context_length"`
			MaxModelLen   int    `json:"max_model_len"`
			ContextWindow int    `json:"context_window"`
		} `json:"data"`
	}
	if err := json.Unmarshal(body, &list); err != nil {
		return nil, err
	}
	out := make([]ModelInfo, 0, len(list.Data))
	for _, m := range list.Data {
		if m.ID == "" {
			continue
		}
		w := max(m.ContextLength, m.MaxModelLen, m.ContextWindow)
		if w == 0 {
			w = ContextWindowOf(m.ID)
		}
		name := m.DisplayName
		if name == "" && m.Name != m.ID {
			name = m.Name
		}
		out = append(out, ModelInfo{ID: m.ID, ContextWindow: w, Name: name})
	}
	slices.SortFunc(out, func(a, b ModelInfo) int { return strings.Compare(a.ID, b.ID) })
	return out, nil
}
