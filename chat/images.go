package chat

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"image"
	_ "image/gif" // image.DecodeConfig reads the sizes of the types a tool card shows
	_ "image/jpeg"
	_ "image/png"
	"os"
	"path/filepath"
	"strings"

	"github.com/jean2/jean2/internal/termtext"
	"github.com/jean2/jean2/tool"
)

// imageLine says what an image of a tool's result is — type, size, pixels — and where it
// was saved for a person to open: "[image/png 34 KB, 640×480: saved to …/3f2a….png]".
func imageLine(mimeType, b64 string) string {
	mimeType = termtext.Line(mimeType)
	data, err := base64.StdEncoding.DecodeString(b64)
	if err != nil {
		return fmt.Sprintf("[%s image that does not decode: %v]", mimeType, err)
	}
	what := mimeType + " " + tool.SizeText(len(data))
	if cfg, _, err := image.DecodeConfig(bytes.NewReader(data)); err == nil {
		what += fmt.Sprintf(", %d×%d", cfg.Width, cfg.Height)
	}
	path, err := saveImage(mimeType, data)
	if err != nil {
		return fmt.Sprintf("[%s: not saved: %v; the web client shows it]", what, err)
	}
	return fmt.Sprintf("[%s: saved to %s]", what, path)
}

// saveImage writes an image to the user's cache folder (jean2/images), named by its hash:
// the same image drawn again is the same file. Not /tmp: another user could put a link in
// a shared folder's place.
func saveImage(mimeType string, data []byte) (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(cache, "jean2", "images")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	sum := sha256.Sum256(data)
	ext := "." + strings.TrimPrefix(mimeType, "image/")
	if ext == ".jpeg" {
		ext = ".jpg"
	}
	path := filepath.Join(dir, hex.EncodeToString(sum[:12])+ext)
	if _, err := os.Lstat(path); err == nil {
		return path, nil
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		return "", err
	}
	return path, nil
}
