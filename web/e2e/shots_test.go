package e2e_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// TestScreenshots saves pictures of the client for a person to look at: a conversation
// with every visualization, at desktop and phone widths, light and dark. It runs only when
// JEAN2_SCREENSHOTS names a folder to write them into.
func TestScreenshots(t *testing.T) {
	dir := os.Getenv("JEAN2_SCREENSHOTS")
	if dir == "" {
		t.Skip("set JEAN2_SCREENSHOTS to a folder to save screenshots of the client")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	f := newFixture(t)
	s := f.session("screenshots")
	var calls [][2]string
	for _, typ := range []string{"diff", "code", "table", "shell-output", "structured-response", "wide-structured"} {
		calls = append(calls, [2]string{"show", fmt.Sprintf(`{"type":%q}`, typ)})
	}
	confirm := `{"ask":{"type":"confirm","question":"Looks right?"}}`
	f.fake.Push(toolCalls(calls...), toolCalls([2]string{"ask_it", confirm}), text("Everything is drawn above."))
	f.open("#/s/" + s.ID)
	f.typeInto("#composer-input", "draw everything\n")
	f.waitText(".tool-card .ask-confirm", "Looks right?")
	f.clickText(".tool-card .ask-confirm", "Yes")
	f.waitText(".message.assistant", "Everything is drawn above.")
	for _, size := range []struct {
		name string
		w, h int64
	}{{"desktop", 1280, 900}, {"phone", 390, 844}} {
		for _, scheme := range []string{"light", "dark"} {
			opts := []chromedp.EmulateViewportOption{}
			if size.name == "phone" {
				opts = append(opts, chromedp.EmulateMobile, chromedp.EmulateTouch)
			}
			if err := f.b.Do(10*time.Second, chromedp.EmulateViewport(size.w, size.h, opts...), emulateScheme(scheme)); err != nil {
				t.Fatal(err)
			}
			for _, page := range []string{"#/s/" + s.ID, "#/settings"} {
				f.open(page)
				time.Sleep(500 * time.Millisecond)
				ctx, cancel := context.WithTimeout(f.b.Ctx, 20*time.Second)
				buf, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
				cancel()
				if err != nil {
					t.Fatal(err)
				}
				name := filepath.Join(dir, fmt.Sprintf("%s-%s-%s.png", size.name, scheme, map[bool]string{true: "chat", false: "settings"}[page != "#/settings"]))
				if err := os.WriteFile(name, buf, 0o644); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
}
