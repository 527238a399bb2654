package tool

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Content types a result's Content may hold: MCP's content blocks, so a jean2 tool's images,
// audio and resources reach an MCP client as they are (mcpserver) and a model as what it
// can take (images as images, the rest as text).
const (
	ContentText         = "text"
	ContentImage        = "image"
	ContentAudio        = "audio"
	ContentResource     = "resource"      // an embedded resource: its text or bytes
	ContentResourceLink = "resource_link" // a URI the reader may fetch
)

// MaxContentBytes bounds the decoded bytes of one result's content blocks (images, audio,
// blobs and texts together); a result with more fails with an error naming the tool. The
// host keeps less than this with the call (host.ContentKeepBytes) and writes the rest to
// files, as it does an overflowing result.
const MaxContentBytes = 16 << 20

// Content is one block of a result beyond its JSON, in MCP's shape: the fields a Type uses
// are set, the others empty. Data and Resource.Blob are base64, as on MCP's wire.
type Content struct {
	Type string `json:"type"`
	// Text is a text block's text.
	Text string `json:"text,omitempty"`
	// Data is an image's or audio's bytes, base64 (standard alphabet, padded).
	Data string `json:"data,omitempty"`
	// MIMEType is an image's, audio's or resource link's media type.
	MIMEType string `json:"mimeType,omitempty"`
	// URI, Name, Title, Description and Size describe a resource link.
	URI         string `json:"uri,omitempty"`
	Name        string `json:"name,omitempty"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description,omitempty"`
	Size        *int64 `json:"size,omitempty"`
	// Resource is an embedded resource's contents.
	Resource *ResourceContents `json:"resource,omitempty"`
}

// ResourceContents is an embedded resource: its URI, media type and either its text or its
// bytes (Blob, base64).
type ResourceContents struct {
	URI      string `json:"uri"`
	MIMEType string `json:"mimeType,omitempty"`
	Text     string `json:"text,omitempty"`
	Blob     string `json:"blob,omitempty"`
}

// TextContent is a text block.
func TextContent(text string) Content { return Content{Type: ContentText, Text: text} }

// ImageContent is an image block of the bytes data, of mimeType (image/png…).
func ImageContent(mimeType string, data []byte) Content {
	return Content{Type: ContentImage, MIMEType: mimeType, Data: base64.StdEncoding.EncodeToString(data)}
}

// AudioContent is an audio block of the bytes data, of mimeType (audio/wav…).
func AudioContent(mimeType string, data []byte) Content {
	return Content{Type: ContentAudio, MIMEType: mimeType, Data: base64.StdEncoding.EncodeToString(data)}
}

// ResourceLink is a link to the resource at uri, named name.
func ResourceLink(uri, name, mimeType string) Content {
	return Content{Type: ContentResourceLink, URI: uri, Name: name, MIMEType: mimeType}
}

// EmbeddedText is an embedded text resource.
func EmbeddedText(uri, mimeType, text string) Content {
	return Content{Type: ContentResource, Resource: &ResourceContents{URI: uri, MIMEType: mimeType, Text: text}}
}

// EmbeddedBlob is an embedded binary resource.
func EmbeddedBlob(uri, mimeType string, data []byte) Content {
	return Content{Type: ContentResource, Resource: &ResourceContents{URI: uri, MIMEType: mimeType, Blob: base64.StdEncoding.EncodeToString(data)}}
}

// Bytes is the decoded Data of an image or audio block, or Blob of an embedded resource;
// nil for the other types. Checked content always decodes.
func (c Content) Bytes() []byte {
	s := c.Data
	if c.Type == ContentResource && c.Resource != nil {
		s = c.Resource.Blob
	}
	if s == "" {
		return nil
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil
	}
	return b
}

// DecodedLen is the length of the decoded Data or Blob, without decoding it.
func (c Content) DecodedLen() int {
	s := c.Data
	if c.Type == ContentResource && c.Resource != nil {
		s = c.Resource.Blob
	}
	return base64.StdEncoding.DecodedLen(len(s)) - strings.Count(s[max(0, len(s)-2):], "=")
}

// ContentError says what is wrong with a result's content: which block and why.
type ContentError struct {
	Index int // the block, from 0
	Err   error
}

func (e *ContentError) Error() string { return fmt.Sprintf("content[%d]: %v", e.Index, e.Err) }
func (e *ContentError) Unwrap() error { return e.Err }

// ErrContentTooLarge is wrapped by CheckContent's error for content over MaxContentBytes.
var ErrContentTooLarge = errors.New("result content too large")

// CheckContent checks a result's content as the host does every result's: known types with
// the fields they need, base64 that decodes, an image or audio media type that says so
// (image/…, audio/…) and, for the image types models and browsers take (ImageTypes), bytes
// that are of that type; at most MaxContentBytes in all.
func CheckContent(content []Content) error {
	total := 0
	for i, c := range content {
		if err := checkBlock(c); err != nil {
			return &ContentError{Index: i, Err: err}
		}
		total += len(c.Text) + c.DecodedLen()
		if c.Resource != nil {
			total += len(c.Resource.Text)
		}
	}
	if total > MaxContentBytes {
		return fmt.Errorf("%w: %d bytes of content, more than the %d (%d MiB) a result may carry; write big files with ctx.fs and return their path",
			ErrContentTooLarge, total, MaxContentBytes, MaxContentBytes>>20)
	}
	return nil
}

func checkBlock(c Content) error {
	switch c.Type {
	case ContentText:
		return nil
	case ContentImage, ContentAudio:
		if !strings.HasPrefix(c.MIMEType, c.Type+"/") {
			return fmt.Errorf("an %s block's mimeType is %q, not %s/…", c.Type, c.MIMEType, c.Type)
		}
		data, err := decodeBase64(c.Data)
		if err != nil {
			return fmt.Errorf("%s %s: data %w", c.Type, c.MIMEType, err)
		}
		if c.Type == ContentImage {
			return SniffImage(c.MIMEType, data)
		}
		return nil
	case ContentResource:
		r := c.Resource
		switch {
		case r == nil || r.URI == "":
			return errors.New("an embedded resource needs resource.uri")
		case (r.Text == "") == (r.Blob == ""):
			return fmt.Errorf("embedded resource %s needs exactly one of resource.text and resource.blob", r.URI)
		case r.Blob != "":
			if _, err := decodeBase64(r.Blob); err != nil {
				return fmt.Errorf("embedded resource %s: blob %w", r.URI, err)
			}
		}
		return nil
	case ContentResourceLink:
		if c.URI == "" || c.Name == "" {
			return errors.New("a resource_link needs uri and name")
		}
		return nil
	}
	return fmt.Errorf("type %q is not one of text, image, audio, resource, resource_link", c.Type)
}

func decodeBase64(s string) ([]byte, error) {
	if s == "" {
		return nil, errors.New("is empty")
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("is not valid base64 (standard alphabet, padded): %v", err)
	}
	return b, nil
}

// SniffImage says whether data is an image of mimeType, for the raster types of ImageTypes
// (as their first bytes tell); other image types are taken as they are named.
func SniffImage(mimeType string, data []byte) error {
	var ok bool
	switch mimeType {
	case "image/png":
		ok = bytes.HasPrefix(data, []byte("\x89PNG\r\n\x1a\n"))
	case "image/jpeg":
		ok = bytes.HasPrefix(data, []byte("\xff\xd8\xff"))
	case "image/gif":
		ok = bytes.HasPrefix(data, []byte("GIF87a")) || bytes.HasPrefix(data, []byte("GIF89a"))
	case "image/webp":
		ok = len(data) >= 12 && string(data[:4]) == "RIFF" && string(data[8:12]) == "WEBP"
	default:
		return nil
	}
	if !ok {
		return fmt.Errorf("the bytes are not a %s image (they start %q); check the mimeType", mimeType, data[:min(len(data), 8)])
	}
	return nil
}

// ContentModelText is the text a model reads of a result's content, its images (of
// ImageTypes) left out: text blocks as they are, an embedded text resource in a block naming its URI, an
// embedded binary resource and a resource link as a line saying what and where. Images are
// given to the model apart (or a stand-in, ContentStandIn, when it takes none); audio
// always gets its stand-in.
func ContentModelText(content []Content) string {
	var parts []string
	for _, c := range content {
		switch c.Type {
		case ContentText:
			parts = append(parts, c.Text)
		case ContentImage:
			if !slices.Contains(ImageTypes, c.MIMEType) {
				parts = append(parts, ContentStandIn(c, "not shown to this model: only PNG, JPEG, GIF and WebP images can be"))
			}
		case ContentAudio:
			parts = append(parts, ContentStandIn(c, "not shown to this model"))
		case ContentResource:
			r := c.Resource
			if r.Text != "" {
				parts = append(parts, fmt.Sprintf("<resource uri=%q mimeType=%q>\n%s\n</resource>", r.URI, r.MIMEType, r.Text))
			} else {
				parts = append(parts, fmt.Sprintf("[resource %s, %s %s: binary, not shown to this model]", r.URI, orUnknown(r.MIMEType), SizeText(c.DecodedLen())))
			}
		case ContentResourceLink:
			line := fmt.Sprintf("[resource link %s: %s", c.Name, c.URI)
			if c.MIMEType != "" {
				line += ", " + c.MIMEType
			}
			if c.Description != "" {
				line += ": " + c.Description
			}
			parts = append(parts, line+"]")
		}
	}
	return strings.Join(parts, "\n")
}

// ContentStandIn is the line that stands for an image or audio block a reader is not given:
// "[image/png 34 KB: not shown to this model]".
func ContentStandIn(c Content, why string) string {
	return fmt.Sprintf("[%s %s: %s]", orUnknown(c.MIMEType), SizeText(c.DecodedLen()), why)
}

// SizeText writes n bytes for people: 812 B, 34 KB, 2.1 MB.
func SizeText(n int) string {
	switch {
	case n < 1000:
		return fmt.Sprintf("%d B", n)
	case n < 1000*1000:
		return fmt.Sprintf("%d KB", (n+500)/1000)
	default:
		return fmt.Sprintf("%.1f MB", float64(n)/1e6)
	}
}

func orUnknown(mime string) string {
	if mime == "" {
		return "application/octet-stream"
	}
	return mime
}

// maxShownImageBytes bounds the base64 of the images one visualization shows: the host
// refuses a visualization over its limit (1 MiB by default) with the whole result, so the
// images stay well under it.
const maxShownImageBytes = 768 << 10

// ImagesVisualization is the images of a result's content as an images visualization, for
// the clients' tool cards; nil when there are none. Images of a type browsers cannot draw
// safely (not ImageTypes), or past the budget, are counted in "omitted" rather than shown.
func ImagesVisualization(content []Content) json.RawMessage {
	type image struct {
		MIMEType string `json:"mimeType"`
		Data     string `json:"data"`
	}
	var shown []image
	omitted, budget := 0, maxShownImageBytes
	for _, c := range content {
		if c.Type != ContentImage {
			continue
		}
		if !slices.Contains(ImageTypes, c.MIMEType) || len(c.Data) > budget {
			omitted++
			continue
		}
		budget -= len(c.Data)
		shown = append(shown, image{MIMEType: c.MIMEType, Data: c.Data})
	}
	if len(shown) == 0 && omitted == 0 {
		return nil
	}
	if shown == nil {
		shown = []image{}
	}
	raw, err := json.Marshal(map[string]any{"type": VizImages, "images": shown, "omitted": omitted})
	if err != nil {
		return nil
	}
	return raw
}
