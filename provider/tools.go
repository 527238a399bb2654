package provider

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/jean2/jean2/llm"
	"github.com/jean2/jean2/tool"
)

// ForTools returns the tool.LLM a call's ctx.llm uses: the session's provider and model.
// generateText is one streamed request without tools, gathered into text;
// generateStructured goes through llm.Structured (schema in the system text, the answer
// validated, one repair attempt). A request's model overrides model; its provider field is
// not honoured (a tool cannot pick another provider, whose key and cost the session did
// not choose). An image must be a data: URL; a host that lets tools give a path reads the
// file through the call's file system first and passes the data URL on.
func ForTools(p Provider, model string) tool.LLM {
	if p == nil {
		return llm.Unconfigured{}
	}
	return llm.FromText(textGen{p: p, model: model})
}

type textGen struct {
	p     Provider
	model string
}

func (g textGen) GenerateText(ctx context.Context, req tool.TextRequest) (string, error) {
	model := req.Model
	if model == "" {
		model = g.model
	}
	if strings.TrimSpace(req.Prompt) == "" && req.Image == "" && len(req.Images) == 0 {
		return "", errors.New("generate text: the request has no prompt")
	}
	if req.MaxTokens < 0 {
		return "", fmt.Errorf("generate text: maxTokens %d is negative", req.MaxTokens)
	}
	msg := Message{Role: RoleUser, Text: req.Prompt}
	urls := req.Images
	if req.Image != "" {
		urls = append([]string{req.Image}, urls...)
	}
	for i, u := range urls {
		img, err := ParseDataURL(u)
		if err != nil {
			return "", fmt.Errorf("generate text: image %d: %w", i, err)
		}
		msg.Images = append(msg.Images, img)
	}
	s, err := g.p.Stream(ctx, Request{Model: model, System: req.System, Messages: []Message{msg}, MaxTokens: req.MaxTokens})
	if err != nil {
		return "", fmt.Errorf("generate text: %w", err)
	}
	r, err := Collect(s)
	if err != nil {
		return "", fmt.Errorf("generate text: %w", err)
	}
	if r.Finish == FinishContentFilter && r.Text == "" {
		return "", errors.New("generate text: the provider refused or filtered the answer")
	}
	return r.Text, nil
}

// ParseDataURL reads an image given as data:<media type>;base64,<data>.
func ParseDataURL(s string) (Image, error) {
	rest, ok := strings.CutPrefix(s, "data:")
	if !ok {
		return Image{}, errors.New("give the image as a data: URL (data:image/png;base64,…)")
	}
	meta, data, ok := strings.Cut(rest, ",")
	if !ok {
		return Image{}, errors.New("the data URL has no comma before its data")
	}
	mediaType, isBase64 := strings.CutSuffix(meta, ";base64")
	if !isBase64 {
		return Image{}, errors.New("the data URL must be base64-encoded (data:image/png;base64,…)")
	}
	switch mediaType {
	case "image/png", "image/jpeg", "image/gif", "image/webp":
	default:
		return Image{}, fmt.Errorf("media type %q is not image/png, image/jpeg, image/gif or image/webp", mediaType)
	}
	raw, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		return Image{}, fmt.Errorf("the data URL's base64 does not decode: %w", err)
	}
	return Image{MediaType: mediaType, Data: raw}, nil
}
