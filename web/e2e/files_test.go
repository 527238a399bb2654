package e2e_test

import (
	"bytes"
	"encoding/base64"
	"image"
	"image/color"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"
)

// redDot is a 30×20 PNG with a red square.
func redDot(t *testing.T) []byte {
	t.Helper()
	img := image.NewRGBA(image.Rect(0, 0, 30, 20))
	for x := 10; x < 20; x++ {
		for y := 5; y < 15; y++ {
			img.Set(x, y, color.RGBA{R: 255, A: 255})
		}
	}
	var buf bytes.Buffer
	if err := png.Encode(&buf, img); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// project writes the fixture's workspace as a git repository with a committed file changed
// since, an untracked one, an image and a sensitive file.
func (f *fixture) project(files map[string][]byte) {
	f.t.Helper()
	write := func(rel string, data []byte) {
		p := filepath.Join(f.ws, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			f.t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			f.t.Fatal(err)
		}
	}
	write("src/main.go", []byte("package main\n\nfunc main() {}\n"))
	gitIn := func(args ...string) {
		cmd := exec.Command("git", append([]string{"-c", "user.email=t@example.com", "-c", "user.name=t"}, args...)...)
		cmd.Dir = f.ws
		if out, err := cmd.CombinedOutput(); err != nil {
			f.t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	gitIn("init", "-q")
	gitIn("add", ".")
	gitIn("commit", "-qm", "first")
	for rel, data := range files {
		write(rel, data)
	}
}

// TestFileBrowser: the files page lists the workspace with git marks, opens a folder when
// asked (its entries loaded then), previews a Go file highlighted, draws an image, and
// withholds a sensitive file's content; axe-core finds nothing on the page.
func TestFileBrowser(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	src := axeSource(t)
	f := newFixture(t)
	f.project(map[string][]byte{
		"src/main.go": []byte("package main\n\n// fileBrowserKey\nfunc main() { println(\"hi\") }\n"),
		"notes.txt":   []byte("an untracked note\n"),
		"dot.png":     redDot(t),
		".env":        []byte("TOKEN=envSecretValue\n"),
	})
	s := f.session("files")
	f.open("#/files/" + s.WorkspaceID)
	f.waitJS("the workspace's top folder", `document.querySelector('.file-tree .file-entry-btn[data-path="src"]') !== null`)
	if got := f.eval(`document.querySelector('.file-entry-btn[data-path="notes.txt"] .git-mark')?.textContent || ""`); got != "U (untracked)" {
		t.Errorf("notes.txt's mark reads %q, want U (untracked)", got)
	}
	if got := f.eval(`document.querySelector('.file-entry-btn[data-path="src"] .git-mark')?.title || ""`); got != "holds changes" {
		t.Errorf("src's mark says %q, want holds changes", got)
	}
	if got := f.eval(`String(document.querySelector('.file-entry-btn[data-path="src/main.go"]'))`); got != "null" {
		t.Fatal("src's files are in the page before the folder was opened")
	}
	f.click(`.file-entry-btn[data-path="src"]`)
	f.waitJS("src opened, its file listed as modified", `document.querySelector('.file-entry-btn[data-path="src"]').getAttribute("aria-expanded") === "true" && document.querySelector('.file-entry-btn[data-path="src/main.go"] .git-modified') !== null`)
	f.click(`.file-entry-btn[data-path="src/main.go"]`)
	f.waitText(".file-preview", "fileBrowserKey")
	f.waitJS("main.go highlighted", `document.querySelector(".file-preview .tok-keyword")?.textContent === "package" && document.querySelector(".file-preview .tok-comment")?.textContent.includes("fileBrowserKey")`)
	f.axeCheck(src, "files page with a preview")

	f.click(`.file-entry-btn[data-path="dot.png"]`)
	f.waitJS("the image drawn", `(() => { const i = document.querySelector(".file-preview img"); return !!i && i.complete && i.naturalWidth === 30 && i.naturalHeight === 20; })()`)

	f.click(`.file-entry-btn[data-path=".env"]`)
	f.waitText(".file-preview", "may hold secrets")
	if strings.Contains(f.eval(`document.body.innerText`), "envSecretValue") {
		t.Error("the page shows the content of .env")
	}
}

// TestMentionAttachesFile: typing @ and some letters offers matching workspace files in a
// listbox; ↓ and Enter take one; the message sent carries the file's content to the model;
// axe-core finds nothing with the list open.
func TestMentionAttachesFile(t *testing.T) {
	src := axeSource(t)
	f := newFixture(t)
	for rel, content := range map[string]string{"src/main.go": "package main // mentionedContentKey\n", "src/mainly.txt": "other\n", "README.md": "# readme\n"} {
		p := filepath.Join(f.ws, filepath.FromSlash(rel))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	s := f.session("mentions")
	f.open("#/s/" + s.ID)
	f.typeInto("#composer-input", "Explain @smn")
	f.waitJS("the file list", `!document.querySelector("#mention-list").hidden && document.querySelectorAll("#mention-list [role=option]").length > 0`)
	if got := f.eval(`[...document.querySelectorAll("#mention-list [role=option]")].map((o) => o.textContent).join(",")`); !strings.HasPrefix(got, "src/main") || strings.Contains(got, "README") {
		t.Errorf("options for @smn: %s, want src/main… first and no README.md", got)
	}
	f.axeCheck(src, "composer with the @ list open")
	f.eval(`(() => { document.querySelector("#mention-list").dataset.first = document.querySelector("#mention-list [aria-selected=true]").textContent; return ""; })()`)
	f.typeInto("#composer-input", kb.ArrowDown)
	f.typeInto("#composer-input", kb.ArrowUp)
	f.waitJS("the active option named by the box", `document.querySelector("#composer-input").getAttribute("aria-activedescendant") === "mention-opt-0"`)
	first := f.eval(`document.querySelector("#mention-list").dataset.first`)
	f.typeInto("#composer-input", "\n")
	f.waitJS("the mention taken", `document.querySelector("#mention-list").hidden && document.querySelector("#composer-input").value === "Explain @`+first+` "`)
	if first != "src/main.go" {
		t.Fatalf("the first option was %q, want src/main.go", first)
	}
	f.fake.Push(text("It is a Go file."))
	f.typeInto("#composer-input", "please\n")
	f.waitText(".message.assistant", "It is a Go file.")
	reqs := f.fake.Requests()
	body := string(reqs[len(reqs)-1].Body)
	if !strings.Contains(body, `<file path=\"src/main.go\"`) || !strings.Contains(body, "mentionedContentKey") {
		t.Errorf("the model's request does not carry src/main.go: %.600s", body)
	}
	f.waitText(".message.user .resource-part", "@src/main.go")
}

// TestPasteAndDropImages: images pasted into the message box and dropped on the composer
// are attached as thumbnails (one removed again before sending), reach the model as image
// parts, and are drawn in the transcript after a reload.
func TestPasteAndDropImages(t *testing.T) {
	f := newFixture(t)
	s := f.session("paste")
	dot := redDot(t)
	b64 := base64.StdEncoding.EncodeToString(dot)
	f.open("#/s/" + s.ID)
	fileJS := `(name) => { const bytes = Uint8Array.from(atob(` + jsString(b64) + `), (c) => c.charCodeAt(0)); const dt = new DataTransfer(); dt.items.add(new File([bytes], name, { type: "image/png" })); return dt; }`
	f.eval(`(() => { const dt = (` + fileJS + `)("pasted.png");
	  document.querySelector("#composer-input").dispatchEvent(new ClipboardEvent("paste", { clipboardData: dt, bubbles: true, cancelable: true })); return ""; })()`)
	f.waitJS("the pasted image's thumbnail", `document.querySelectorAll(".composer-attachments .attachment img").length === 1`)
	f.eval(`(() => { const dt = (` + fileJS + `)("dropped.png");
	  document.querySelector(".composer").dispatchEvent(new DragEvent("drop", { dataTransfer: dt, bubbles: true, cancelable: true })); return ""; })()`)
	f.waitJS("the dropped image's thumbnail", `document.querySelectorAll(".composer-attachments .attachment img").length === 2`)
	f.click(`.composer-attachments button[aria-label="Remove pasted.png"]`)
	f.waitJS("one thumbnail left, the dropped one", `[...document.querySelectorAll(".composer-attachments .attachment figcaption")].map((e) => e.textContent).join() === "dropped.png"`)

	f.fake.Push(text("One red dot."))
	f.typeInto("#composer-input", "What is this?\n")
	f.waitText(".message.assistant", "One red dot.")
	reqs := f.fake.Requests()
	body := string(reqs[len(reqs)-1].Body)
	if n := strings.Count(body, "data:image/png;base64,"+b64); n != 1 {
		t.Errorf("the model's request carries the image %d times, want once (the removed one not sent): %.400s", n, body)
	}
	if err := f.b.Do(20*time.Second, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	f.waitJS("the image drawn from the store", `(() => { const i = document.querySelectorAll(".message.user img.attached-image"); return i.length === 1 && i[0].complete && i[0].naturalWidth === 30; })()`)
}
