package host

import (
	"fmt"
	"mime"
	"path/filepath"

	"github.com/jean2/jean2/internal/fsutil"
	"github.com/jean2/jean2/tool"
)

// ContentKeepBytes is how many decoded bytes of a result's images, audio and blobs are kept
// with the call (in the store, replayed to the model): a screenshot or two. A block past it
// is written to a file in the session's temporary folder, as an overflowing result is, and
// its place taken by a link to the file. An image past MaxImageBytes (what the strictest
// provider takes per image) goes to a file whatever the budget left. (A worker's answer is
// bounded before this by Limits.MaxResultBytes, 8 MiB of JSON by default.)
const (
	ContentKeepBytes = 4 << 20
	MaxImageBytes    = 5 << 20
)

// checkContent refuses a result whose content or protocol error is unusable, naming the tool.
func checkContent(res tool.Result, toolName string) tool.Result {
	if pe := res.ProtocolError; pe != nil {
		if err := pe.Check(); err != nil {
			// A protocol error the client could not read is worse than a tool error: the
			// call fails as the latter, saying what the tool got wrong.
			return tool.Result{Error: fmt.Sprintf("tool %s failed with an unusable protocol error %.200q: %v", toolName, pe.Message, err)}.Normalize()
		}
	}
	if len(res.Content) == 0 {
		return res
	}
	if err := tool.CheckContent(res.Content); err != nil {
		return tool.Result{Error: fmt.Sprintf("tool %s returned unusable content: %v", toolName, err)}.Normalize()
	}
	return res
}

// spillContent writes the binary blocks past ContentKeepBytes to files in tempDir (below
// tempRoot) and puts a resource link to each in its place. A block that cannot be written
// becomes a stand-in line saying so: nothing unbounded is kept.
func spillContent(content []tool.Content, tempRoot, tempDir, callID string) []tool.Content {
	budget := ContentKeepBytes
	var out []tool.Content
	for i, c := range content {
		n := c.DecodedLen()
		if n == 0 || (n <= budget && !(c.Type == tool.ContentImage && n > MaxImageBytes)) {
			budget -= n
			if out != nil {
				out = append(out, c)
			}
			continue
		}
		if out == nil {
			out = append(make([]tool.Content, 0, len(content)), content[:i]...)
		}
		out = append(out, spillBlock(c, tempRoot, tempDir, callID))
	}
	if out == nil {
		return content
	}
	return out
}

// spillBlock writes one block's bytes to a file and returns the link that replaces it.
func spillBlock(c tool.Content, tempRoot, tempDir, callID string) tool.Content {
	mimeType := c.MIMEType
	if c.Type == tool.ContentResource {
		mimeType = c.Resource.MIMEType
	}
	rel, err := filepath.Rel(tempRoot, tempDir)
	path := ""
	if err == nil {
		path, err = fsutil.WriteNew(tempRoot, rel, "tool-result-"+safeName(callID)+"-", extensionOf(mimeType), c.Bytes(), 0o600)
	}
	if err != nil {
		return tool.TextContent(tool.ContentStandIn(c, fmt.Sprintf("too big to keep with the call, and it could not be written to a file: %v", err)))
	}
	size := int64(c.DecodedLen())
	return tool.Content{
		Type: tool.ContentResourceLink, URI: "file://" + path, Name: filepath.Base(path), MIMEType: mimeType, Size: &size,
		Description: fmt.Sprintf("the %s %s of the result, too big to keep with the call: written to this file", c.Type, tool.SizeText(int(size))),
	}
}

// extensionOf is a file extension for a media type, ".bin" when none is known.
func extensionOf(mimeType string) string {
	switch mimeType {
	case "image/png":
		return ".png"
	case "image/jpeg":
		return ".jpg"
	case "audio/wav", "audio/x-wav":
		return ".wav"
	}
	if exts, _ := mime.ExtensionsByType(mimeType); len(exts) > 0 {
		return exts[0]
	}
	return ".bin"
}

// modelText is the result as the model reads it, its content's text (tool.ContentModelText)
// after the result's own text; images go to the model apart from it.
func modelText(res tool.Result) ([]byte, bool) {
	if len(res.Content) == 0 {
		return res.ModelText()
	}
	content := tool.ContentModelText(res.Content)
	if res.Success && res.Result == nil && res.Summary == "" {
		return []byte(content), true
	}
	text, isText := res.ModelText()
	if content == "" {
		return text, isText
	}
	return append(append(text, "\n\n"...), content...), true
}
