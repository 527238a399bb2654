package store

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// Limits of the images a message may carry.
const (
	// MaxImageBytes is the largest image kept: 5 MiB, what the strictest provider
	// (Anthropic) accepts per image.
	MaxImageBytes = 5 << 20
	// MaxImages is the most images one message may carry.
	MaxImages = 20
)

// ErrBadImage is wrapped by CheckImage's errors.
var ErrBadImage = errors.New("unusable image")

// CheckImage says what is wrong with an image a person sends: a media type that is not
// image/png, image/jpeg, image/gif or image/webp, bytes that are not of that type (as their
// first bytes tell), no bytes, or more than MaxImageBytes.
func CheckImage(mediaType string, data []byte) error {
	var magic func([]byte) bool
	switch mediaType {
	case "image/png":
		magic = func(b []byte) bool { return bytes.HasPrefix(b, []byte("\x89PNG\r\n\x1a\n")) }
	case "image/jpeg":
		magic = func(b []byte) bool { return bytes.HasPrefix(b, []byte("\xff\xd8\xff")) }
	case "image/gif":
		magic = func(b []byte) bool {
			return bytes.HasPrefix(b, []byte("GIF87a")) || bytes.HasPrefix(b, []byte("GIF89a"))
		}
	case "image/webp":
		magic = func(b []byte) bool { return len(b) >= 12 && string(b[:4]) == "RIFF" && string(b[8:12]) == "WEBP" }
	default:
		return fmt.Errorf("%w: media type %q is not image/png, image/jpeg, image/gif or image/webp", ErrBadImage, mediaType)
	}
	switch {
	case len(data) == 0:
		return fmt.Errorf("%w: the %s image has no bytes", ErrBadImage, mediaType)
	case len(data) > MaxImageBytes:
		return fmt.Errorf("%w: the %s image is %d bytes, more than the %d (%d MiB) allowed; send it smaller",
			ErrBadImage, mediaType, len(data), MaxImageBytes, MaxImageBytes>>20)
	case !magic(data):
		return fmt.Errorf("%w: the bytes are not a %s image (they start %q); check the media type", ErrBadImage, mediaType, head(data, 8))
	}
	return nil
}

func head(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}

// ToolContentType is the media type of a tool part's Data: the JSON of the images its
// result carried (tool.Content blocks), kept so a history replays them to the model. The
// host keeps at most host.ContentKeepBytes of content decoded and writes the rest to files.
const ToolContentType = "application/vnd.jean2.tool-content+json"

// MaxToolContentBytes bounds a tool part's Data: the host's 4 MiB kept, as base64 in JSON.
const MaxToolContentBytes = 8 << 20

// checkToolContent says what is wrong with a tool part's Data, if it has some.
func checkToolContent(p Part) error {
	switch {
	case p.MediaType == "" && len(p.Data) == 0:
		return nil
	case p.MediaType != ToolContentType:
		return fmt.Errorf("a %s part's data is of %s, not %q", p.Kind, p.MediaType, ToolContentType)
	case len(p.Data) > MaxToolContentBytes:
		return fmt.Errorf("a %s part's content is %d bytes, more than the %d allowed", p.Kind, len(p.Data), MaxToolContentBytes)
	case !json.Valid(p.Data):
		return fmt.Errorf("a %s part's content is not valid JSON", p.Kind)
	}
	return nil
}
