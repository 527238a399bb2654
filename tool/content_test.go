package tool

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"
)

// CheckContent refuses what a model or an MCP client could not use, saying which block and
// why; the helpers make blocks it accepts.
func TestCheckContent(t *testing.T) {
	png := []byte("\x89PNG\r\n\x1a\n....")
	good := []Content{TextContent("t"), ImageContent("image/png", png), ImageContent("image/svg+xml", []byte("<svg/>")),
		AudioContent("audio/wav", []byte("RIFF")), ResourceLink("test://x", "x", ""), EmbeddedText("test://a", "text/plain", "a"),
		EmbeddedBlob("test://b", "application/octet-stream", []byte{0, 1})}
	if err := CheckContent(good); err != nil {
		t.Fatalf("good content refused: %v", err)
	}
	for _, tc := range []struct {
		name string
		c    Content
		want string
	}{
		{"bad base64", Content{Type: ContentImage, MIMEType: "image/png", Data: "not base64!"}, "content[0]: image image/png: data is not valid base64"},
		{"empty data", Content{Type: ContentAudio, MIMEType: "audio/wav"}, "content[0]: audio audio/wav: data is empty"},
		{"wrong mimeType", Content{Type: ContentImage, MIMEType: "text/plain", Data: "AA=="}, `an image block's mimeType is "text/plain", not image/…`},
		{"bytes of another type", ImageContent("image/jpeg", png), "the bytes are not a image/jpeg image"},
		{"unknown type", Content{Type: "video"}, `type "video" is not one of text, image, audio, resource, resource_link`},
		{"resource text and blob", Content{Type: ContentResource, Resource: &ResourceContents{URI: "u", Text: "a", Blob: "AA=="}}, "exactly one of resource.text and resource.blob"},
		{"link without name", Content{Type: ContentResourceLink, URI: "u"}, "a resource_link needs uri and name"},
	} {
		err := CheckContent([]Content{tc.c})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v, want it to contain %q", tc.name, err, tc.want)
		}
	}
	big := ImageContent("image/png", append(png, make([]byte, MaxContentBytes)...))
	if err := CheckContent([]Content{big}); !errors.Is(err, ErrContentTooLarge) {
		t.Fatalf("oversize content: %v", err)
	}
	if n := good[1].DecodedLen(); n != len(png) {
		t.Fatalf("DecodedLen = %d, want %d", n, len(png))
	}
	if got := base64.StdEncoding.EncodeToString(good[1].Bytes()); got != good[1].Data {
		t.Fatal("Bytes does not round-trip")
	}
}

// The model reads every block but the images it is given apart, and a stand-in for the
// rest: audio, images of types no model takes, binary resources.
func TestContentModelText(t *testing.T) {
	got := ContentModelText([]Content{TextContent("chart:"), ImageContent("image/png", []byte("\x89PNG")),
		ImageContent("image/svg+xml", []byte("<svg/>")), AudioContent("audio/wav", make([]byte, 34_000)),
		EmbeddedBlob("test://b", "application/pdf", make([]byte, 2_500_000)), ResourceLink("test://x", "x", "text/csv")})
	want := "chart:\n[image/svg+xml 6 B: not shown to this model: only PNG, JPEG, GIF and WebP images can be]\n" +
		"[audio/wav 34 KB: not shown to this model]\n[resource test://b, application/pdf 2.5 MB: binary, not shown to this model]\n" +
		"[resource link x: test://x, text/csv]"
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}
