package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/provider/providertest"
	"github.com/jean2/jean2/store"
)

// pngDot is a PNG's signature and header: what the file API and the providers look at.
var pngDot = append([]byte("\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR"), bytes.Repeat([]byte{1}, 40)...)

// git runs git in dir for a test's set-up.
func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := exec.Command("git", append([]string{"-c", "user.email=t@example.com", "-c", "user.name=t", "-c", "init.defaultBranch=main"}, args...)...)
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

type listing struct {
	Path    string
	Git     bool
	Entries []fileEntry
}

func (l listing) entry(name string) (fileEntry, bool) {
	for _, e := range l.Entries {
		if e.Name == name {
			return e, true
		}
	}
	return fileEntry{}, false
}

// The file browser's API lists a folder with git's marks (a file changed, added,
// untracked, deleted; a folder holding one), folders first, .git left out, and a
// sensitive file listed but marked; subfolders are listed on their own.
func TestFilesListWithGitMarks(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	f := newFixture(t)
	f.tools = nil
	f.start()
	writeFiles(t, f.ws, map[string]string{"README.md": "# hi\n", "gone.txt": "bye\n", "src/main.go": "package main\n", "src/util.go": "package main\n"})
	git(t, f.ws, "init", "-q")
	git(t, f.ws, "add", ".")
	git(t, f.ws, "commit", "-qm", "first")
	writeFiles(t, f.ws, map[string]string{"README.md": "# hi, changed\n", "new.txt": "new\n", "src/added.go": "package main\n", ".env": "TOKEN=secret\n"})
	git(t, f.ws, "add", "src/added.go")
	if err := os.Remove(filepath.Join(f.ws, "gone.txt")); err != nil {
		t.Fatal(err)
	}
	ws, _ := f.session()

	var root listing
	f.call("GET", "/api/workspaces/"+ws.ID+"/files", nil, 200, &root)
	want := map[string][2]string{"README.md": {"file", "modified"}, "new.txt": {"file", "untracked"}, "gone.txt": {"file", "deleted"},
		"src": {"dir", "changed"}, ".env": {"file", "untracked"}}
	for name, w := range want {
		e, ok := root.entry(name)
		if !ok || e.Type != w[0] || e.Git != w[1] {
			t.Errorf("%s: %+v (listed %v), want type %s, git %s", name, e, ok, w[0], w[1])
		}
	}
	if !root.Git || root.Entries[0].Name != "src" {
		t.Errorf("listing %+v: want git true and the folder first", root)
	}
	if _, ok := root.entry(".git"); ok {
		t.Error(".git is listed")
	}
	if e, _ := root.entry(".env"); !e.Sensitive {
		t.Errorf(".env is not marked sensitive: %+v", e)
	}
	var src listing
	f.call("GET", "/api/workspaces/"+ws.ID+"/files?path=src", nil, 200, &src)
	if e, _ := src.entry("added.go"); e.Git != "added" || e.Path != "src/added.go" {
		t.Errorf("src/added.go: %+v", e)
	}
	if e, ok := src.entry("util.go"); !ok || e.Git != "" {
		t.Errorf("src/util.go: %+v (listed %v), want unmarked", e, ok)
	}
	// Without a token the route answers nothing.
	if status, _ := f.request("GET", "/api/workspaces/"+ws.ID+"/files", nil, http.Header{"Cookie": {"x=y"}}); status != 401 {
		t.Errorf("listing without a token: %d, want 401", status)
	}
}

// A file's content: text (cut at MaxPreviewBytes, said so), an image as base64, a binary
// file described without its bytes.
func TestFileContent(t *testing.T) {
	f := newFixture(t)
	f.tools = nil
	f.start()
	big := strings.Repeat("0123456789abcdef", MaxPreviewBytes/16+10)
	writeFiles(t, f.ws, map[string]string{"a.go": "package a\n", "big.txt": big, "dot.png": string(pngDot), "blob.bin": "\x00\x01\x02binary"})
	ws, _ := f.session()
	read := func(p string) fileContent {
		var fc fileContent
		f.call("GET", "/api/workspaces/"+ws.ID+"/files/content?path="+p, nil, 200, &fc)
		return fc
	}
	if fc := read("a.go"); fc.Kind != "text" || fc.Text != "package a\n" || fc.Truncated || fc.Size != 10 {
		t.Errorf("a.go: %+v", fc)
	}
	if fc := read("big.txt"); fc.Kind != "text" || len(fc.Text) != MaxPreviewBytes || !fc.Truncated || fc.Size != int64(len(big)) {
		t.Errorf("big.txt: kind %s, %d bytes of text, truncated %v, size %d", fc.Kind, len(fc.Text), fc.Truncated, fc.Size)
	}
	if fc := read("dot.png"); fc.Kind != "image" || fc.MediaType != "image/png" || fc.Data != base64.StdEncoding.EncodeToString(pngDot) {
		t.Errorf("dot.png: %+v", fc)
	}
	if fc := read("blob.bin"); fc.Kind != "binary" || fc.Text != "" || fc.Data != "" || fc.Size != 9 {
		t.Errorf("blob.bin: %+v", fc)
	}
}

// Nothing outside the workspace is read or listed: a path that climbs out, an absolute
// path, a symlink to a file or a folder outside; a sensitive file's content is withheld;
// the refusals say why.
func TestFilesRefusals(t *testing.T) {
	f := newFixture(t)
	f.tools = nil
	f.start()
	outside := filepath.Join(f.root, "outside")
	writeFiles(t, outside, map[string]string{"secret.txt": "outside secret\n"})
	writeFiles(t, f.ws, map[string]string{".env": "TOKEN=abc123\n", "config/credentials.json": "{\"k\":1}", "ok.txt": "fine\n"})
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(f.ws, "link.txt")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(outside, filepath.Join(f.ws, "linkdir")); err != nil {
		t.Fatal(err)
	}
	ws, _ := f.session()
	base := "/api/workspaces/" + ws.ID + "/files"
	for _, c := range []struct{ url, code, says string }{
		{base + "/content?path=../outside/secret.txt", codeForbidden, "not a plain path"},
		{base + "/content?path=" + filepath.Join(outside, "secret.txt"), codeForbidden, "not a path inside workspace"},
		{base + "/content?path=link.txt", codeForbidden, "not open to reading"},
		{base + "/content?path=linkdir/secret.txt", codeForbidden, "not open to reading"},
		{base + "?path=linkdir", codeForbidden, "not open to reading"},
		{base + "?path=..", codeForbidden, "not a plain path"},
		{base + "/content?path=.env", codeSensitive, "may hold secrets"},
		{base + "/content?path=config/credentials.json", codeSensitive, "may hold secrets"},
		{base + "/content?path=missing.txt", "not_found", "not found"},
	} {
		status, body := f.request("GET", c.url, nil, nil)
		if status != 403 && c.code != "not_found" || errorCode(t, body) != c.code || !strings.Contains(string(body), c.says) {
			t.Errorf("GET %s: %d %s, want code %s saying %q", c.url, status, body, c.code, c.says)
		}
		if strings.Contains(string(body), "outside secret") || strings.Contains(string(body), "abc123") {
			t.Errorf("GET %s shows what it refused: %s", c.url, body)
		}
	}
	var root listing
	f.call("GET", base, nil, 200, &root)
	if e, _ := root.entry("link.txt"); e.Type != "link" {
		t.Errorf("link.txt listed as %+v, want a link", e)
	}
	var paths struct{ Paths []string }
	f.call("GET", base+"/paths", nil, 200, &paths)
	if strings.Join(paths.Paths, ",") != "ok.txt" {
		t.Errorf("paths offered for mentions: %v, want only ok.txt (no sensitive file, nothing through a link)", paths.Paths)
	}
}

// A repository's own configuration cannot make the server run a command: a filter driver
// whose clean command git would run on a changed file, and an fsmonitor hook (a tool may
// write .git/config; the listing runs outside every sandbox).
func TestFilesGitConfigRunsNothing(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git is not installed")
	}
	f := newFixture(t)
	f.tools = nil
	f.start()
	writeFiles(t, f.ws, map[string]string{"a.txt": "one\n", ".gitattributes": "* filter=evil\n"})
	git(t, f.ws, "init", "-q")
	git(t, f.ws, "add", ".")
	git(t, f.ws, "commit", "-qm", "first")
	marker := filepath.Join(f.root, "ran")
	for _, kv := range [][2]string{{"filter.evil.clean", "touch " + marker + "; cat"}, {"filter.evil.process", "touch " + marker}, {"core.fsmonitor", "touch " + marker + ";true"}} {
		git(t, f.ws, "config", kv[0], kv[1])
	}
	// Changed after the index was written, and with the same size: git must read it.
	time.Sleep(1100 * time.Millisecond)
	writeFiles(t, f.ws, map[string]string{"a.txt": "two\n"})
	ws, _ := f.session()
	var root listing
	f.call("GET", "/api/workspaces/"+ws.ID+"/files", nil, 200, &root)
	if _, err := os.Stat(marker); err == nil {
		t.Fatal("listing the workspace ran a command of its .git/config")
	}
	if e, _ := root.entry("a.txt"); e.Git != "modified" {
		t.Errorf("a.txt: %+v, want modified", e)
	}
}

// Mentioned files (@path) reach the model with the message: a text file's content named by
// its path, a large one cut with a line saying so, an image as an image part; a sensitive
// or outside file refuses the message, which is then neither stored nor sent.
func TestMentionedFilesReachTheModel(t *testing.T) {
	f := newFixture(t)
	f.tools = nil
	f.start()
	big := strings.Repeat("x", MaxPreviewBytes+100)
	writeFiles(t, f.ws, map[string]string{"src/a.go": "package a // mentionKey\n", "big.log": big, "dot.png": string(pngDot), ".env": "TOKEN=abc123\n"})
	_, ses := f.session()
	turns := "/api/sessions/" + ses.ID + "/turns"
	f.fake.Push(providertest.OpenAIText("test-model", "Seen."))
	f.call("POST", turns, map[string]any{"text": "Look at @src/a.go", "files": []map[string]string{{"path": "src/a.go"}, {"path": "big.log"}, {"path": "dot.png"}}}, 202, nil)
	msgs := waitMessages(t, f, ses.ID, 2)
	user := msgs[0]
	if len(user.Parts) != 3 || user.Parts[0].Kind != store.PartResource || user.Parts[0].Args != `{"workspaceId":"`+ses.WorkspaceID+`","path":"src/a.go"}` {
		t.Fatalf("user message parts %+v", user.Parts)
	}
	body := string(f.fake.Requests()[0].Body)
	for _, want := range []string{
		`<file path=\"src/a.go\" mimeType=\"text/plain; charset=utf-8\">\npackage a // mentionKey\n\n</file>`,
		"[cut: big.log is 262244 bytes; only its first 262144 are attached]",
		"data:image/png;base64," + base64.StdEncoding.EncodeToString(pngDot),
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the model's request lacks %s", want)
		}
	}
	for _, c := range []struct{ path, code string }{{".env", codeSensitive}, {"../outside.txt", codeForbidden}, {"nope.txt", "not_found"}} {
		data := f.call("POST", turns, map[string]any{"text": "again", "files": []map[string]string{{"path": c.path}}}, map[string]int{codeSensitive: 403, codeForbidden: 403, "not_found": 404}[c.code], nil)
		if errorCode(t, data) != c.code || !strings.Contains(string(data), "files[0]") || strings.Contains(string(data), "abc123") {
			t.Errorf("mention of %s: %s, want code %s naming files[0]", c.path, data, c.code)
		}
	}
	if n := len(waitMessages(t, f, ses.ID, 2)); n != 2 || len(f.fake.Requests()) != 1 {
		t.Errorf("refused messages were stored or sent: %d messages, %d requests", n, len(f.fake.Requests()))
	}
	// An edit mentions files as a turn does: read again, now.
	writeFiles(t, f.ws, map[string]string{"src/a.go": "package a // editedKey\n"})
	f.fake.Push(providertest.OpenAIText("test-model", "Edited."))
	f.call("POST", "/api/sessions/"+ses.ID+"/messages/"+user.ID+"/resend", map[string]any{"text": "Only @src/a.go", "files": []map[string]string{{"path": "src/a.go"}}}, 202, nil)
	waitMessages(t, f, ses.ID, 2)
	deadline := time.Now().Add(30 * time.Second)
	for len(f.fake.Requests()) < 2 {
		if time.Now().After(deadline) {
			t.Fatal("the edit never reached the model")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if body := string(f.fake.Requests()[1].Body); !strings.Contains(body, "editedKey") || strings.Contains(body, "data:image/png") {
		t.Errorf("the edit's request does not carry src/a.go as it is now (or still carries the image): %.300s", body[max(len(body)-600, 0):])
	}
}

// waitMessages waits until the session holds n messages, the last one complete.
func waitMessages(t *testing.T, f *fixture, sessionID string, n int) []store.Message {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var msgs struct{ Messages []store.Message }
	for {
		f.call("GET", "/api/sessions/"+sessionID+"/messages", nil, 200, &msgs)
		if len(msgs.Messages) == n && msgs.Messages[n-1].Status == store.StatusComplete {
			return msgs.Messages
		}
		if ctx.Err() != nil {
			t.Fatalf("the session never held %d complete messages: %+v", n, msgs.Messages)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A mentioned image reaches a model that takes none (noImages in providers.json) as a line
// saying what it was, beside the file's path, never as image bytes.
func TestMentionedImageForATextOnlyModel(t *testing.T) {
	f := newFixture(t)
	f.tools = nil
	f.start()
	writeFiles(t, f.ws, map[string]string{"dot.png": string(pngDot)})
	f.call("PUT", "/api/providers", map[string]any{"default": "textonly", "providers": []map[string]any{
		{"name": "textonly", "kind": "openai", "baseUrl": f.fake.BaseURL(), "apiKey": f.fake.Key, "model": "test-model", "noImages": true},
	}}, 200, nil)
	_, ses := f.session()
	f.fake.Push(providertest.OpenAIText("test-model", "Cannot see it."))
	f.call("POST", "/api/sessions/"+ses.ID+"/turns", map[string]any{"text": "@dot.png", "files": []map[string]string{{"path": "dot.png"}}}, 202, nil)
	waitMessages(t, f, ses.ID, 2)
	body := string(f.fake.Requests()[0].Body)
	if strings.Contains(body, "data:image/png") || !strings.Contains(body, `<file path=\"dot.png\" mimeType=\"image/png\" /> (the image below)`) ||
		!strings.Contains(body, fmt.Sprintf("[image/png %d B: not shown to this model]", len(pngDot))) {
		i := strings.LastIndex(body, `"role":"user"`) - 1500
		t.Errorf("the text-only model's request ends: %s", body[max(i, 0):])
	}
}
