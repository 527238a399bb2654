package e2e_test

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestImagesInTheConversation: an image attached in the composer (a file that is not an
// image is refused with a message) goes to the model with the text, is drawn in the user's
// message, and is drawn again from the store after a reload.
func TestImagesInTheConversation(t *testing.T) {
	f := newFixture(t)
	s := f.session("images")
	dir := t.TempDir()
	var buf bytes.Buffer
	img := image.NewRGBA(image.Rect(0, 0, 30, 20))
	for x := 10; x < 20; x++ {
		for y := 5; y < 15; y++ {
			img.Set(x, y, color.RGBA{R: 255, A: 255})
		}
	}
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	pngPath := filepath.Join(dir, "dot.png")
	txtPath := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(pngPath, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(txtPath, []byte("not an image"), 0o644); err != nil {
		t.Fatal(err)
	}

	f.open("#/s/" + s.ID)
	f.waitJS("the message box", `document.querySelector("#composer-input") !== null`)
	if err := f.b.Do(20*time.Second, chromedp.SetUploadFiles(chromedp.CSS("#attach-input"), []string{pngPath, txtPath}, chromedp.NodeReady)); err != nil {
		t.Fatal(err)
	}
	f.waitJS("the attachment", `document.querySelectorAll(".composer-attachments .attachment").length === 1`)
	f.waitText(".composer .error", "notes.txt is not a PNG, JPEG, GIF or WebP image")

	f.fake.Push(text("A red ", "dot."))
	f.typeInto("#composer-input", "What is this?\n")
	f.waitText(".message.assistant", "A red dot.")
	f.waitText(".message.user", "What is this?")
	drawn := `(() => { const i = document.querySelector(".message.user img.attached-image"); return !!i && i.complete && i.naturalWidth === 30 && i.naturalHeight === 20; })()`
	f.waitJS("the image drawn in the user's message", drawn)
	if got := f.eval(`String(document.querySelectorAll(".composer-attachments .attachment").length)`); got != "0" {
		t.Errorf("%s attachments left in the composer after sending, want 0", got)
	}

	reqs := f.fake.Requests()
	if len(reqs) == 0 {
		t.Fatal("the model was not asked")
	}
	body := string(reqs[len(reqs)-1].Body)
	if want := "data:image/png;base64," + base64.StdEncoding.EncodeToString(buf.Bytes()); !strings.Contains(body, want) {
		t.Errorf("the model's request does not carry the image: %.400s", body)
	}

	if err := f.b.Do(20*time.Second, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	f.waitText(".message.assistant", "A red dot.")
	f.waitText(".message.user", "What is this?")
	f.waitJS("the image drawn from the store", drawn)
}

// TestWorkspaceWidened: a tool that adds a folder to the workspace (after the person
// allows it) and one that removes it again each say so on their call's card.
func TestWorkspaceWidened(t *testing.T) {
	f := newFixture(t)
	s := f.session("widen")
	other := t.TempDir()
	f.fake.Push(
		toolCalls([2]string{"widen", fmt.Sprintf(`{"path":%q}`, other)}),
		toolCalls([2]string{"widen", fmt.Sprintf(`{"path":%q,"remove":true}`, other)}),
		text("Done."))
	f.open("#/s/" + s.ID)
	f.typeInto("#composer-input", "widen and narrow\n")
	f.waitText("dialog[open] .ask-permission", other)
	f.answerDialog("once")
	f.waitText(".tool-card", "The workspace now also allows "+other)
	f.waitText(".tool-card", "The workspace no longer allows "+other)
	f.waitText(".message.assistant", "Done.")
	if got := f.eval(`String(document.querySelectorAll(".tool-card .tool-workspace-note").length)`); got != "2" {
		t.Errorf("%s workspace notes on the cards, want 2 (one per call)", got)
	}
}
