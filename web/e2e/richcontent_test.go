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
	"github.com/jean2/jean2/builtin"
	"github.com/jean2/jean2/server"
	"github.com/jean2/jean2/tool"
)

// TestToolImagesInTheCard: a jean2 tool that returns an image (content beyond JSON) and
// read-file of a PNG each show the image in their tool card, drawn again from the store
// after a reload, and the model is given both images (issue 25, point 2; issue 24, point 10).
func TestToolImagesInTheCard(t *testing.T) {
	var buf bytes.Buffer
	img := image.NewRGBA(image.Rect(0, 0, 30, 20))
	img.Set(3, 3, color.RGBA{R: 255, A: 255})
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	b64 := base64.StdEncoding.EncodeToString(buf.Bytes())
	chart := fmt.Sprintf(`export const definition = { name: 'chart', description: 'Draw a chart.', inputSchema: { type: 'object' } };
export async function execute() {
  return { success: true, content: [{ type: 'text', text: 'the chart' }, { type: 'image', data: %q, mimeType: 'image/png' }] };
}
`, b64)
	f := newFixtureWith(t, func(f *fixture, cfg *server.Config) {
		f.writeTool(cfg.Host.Layout.Tools, "chart", chart)
		cfg.Host.Builtins = []tool.Tool{builtin.ReadFile()}
	})
	pngPath := filepath.Join(f.ws, "dot.png")
	if err := os.WriteFile(pngPath, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	s := f.session("tool images")
	f.fake.Push(toolCalls([2]string{"chart", `{}`}, [2]string{"read-file", fmt.Sprintf(`{"path":%q}`, pngPath)}), text("Two images."))
	f.open("#/s/" + s.ID)
	f.typeInto("#composer-input", "draw and read\n")
	f.waitText(".message.assistant", "Two images.")
	drawn := `(() => { const imgs = [...document.querySelectorAll(".tool-card img.viz-image")];
	  return imgs.length === 2 && imgs.every((i) => i.complete && i.naturalWidth === 30 && i.naturalHeight === 20); })()`
	f.waitJS("both images drawn in their tool cards", drawn)
	if got := f.eval(`document.body.innerText`); strings.Contains(got, "not shown") {
		t.Errorf("the page says an image is not shown: %.300s", got)
	}

	reqs := f.fake.Requests()
	body := string(reqs[len(reqs)-1].Body)
	if n := strings.Count(body, "data:image/png;base64,"+b64); n != 2 {
		t.Errorf("the model's request carries the image %d times, want 2 (the tool's and read-file's): %.600s", n, body)
	}

	if err := f.b.Do(20*time.Second, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	f.waitText(".message.assistant", "Two images.")
	f.waitJS("both images drawn from the store", drawn)
}
