package e2e_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/mcpclient"
	"github.com/jean2/jean2/mcpclient/oauthtest"
	"github.com/jean2/jean2/server"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestMCPServerConnectButton: Settings lists a hosted MCP server that needs OAuth as "needs
// sign-in"; its Connect button opens the authorization page in a new tab (the authorization
// server approves at once and redirects to jean2's loopback listener, as after a person's
// "allow"), and the row turns connected, with Sign out, which takes the token back.
func TestMCPServerConnectButton(t *testing.T) {
	as := oauthtest.NewAuthServer(t, time.Hour)
	url := oauthtest.ProtectedServer(t, as)
	var m *mcpclient.Manager
	f := newFixtureWith(t, func(f *fixture, cfg *server.Config) {
		m = mcpclient.New(mcpclient.Config{Servers: []mcpclient.ServerConfig{{Name: "hosted", URL: url, Type: "http", File: "mcp.json"}}}, nil,
			mcpclient.Options{Tokens: mcpclient.NewTokenStore(f.home), MinBackoff: time.Minute, MaxBackoff: time.Minute,
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		m.Start(ctx)
		cfg.Host.Sources = append([]host.ToolSource{}, m.Sources()...)
	})
	t.Cleanup(m.Close)
	f.otherSite = true // the sign-in tab opens the authorization server's page
	f.open("#/settings")
	f.waitText(`tr[data-server="hosted"]`, "needs sign-in")
	f.waitText(`tr[data-server="hosted"] .mcp-error`, "jean2 mcp login hosted")
	f.clickText(`tr[data-server="hosted"]`, "Connect hosted")
	f.waitJS("the server connected", `document.querySelector('tr[data-server="hosted"]')?.dataset.state === "connected"`)
	f.waitText(`tr[data-server="hosted"]`, "Sign out")
	if tools, _ := m.Servers()[0].Tools(); len(tools) != 1 {
		t.Fatalf("tools after Connect: %d", len(tools))
	}
	f.clickText(`tr[data-server="hosted"]`, "Sign out hosted")
	f.waitJS("the Connect button back", `[...document.querySelectorAll('tr[data-server="hosted"] button')].some((b) => b.textContent.trim() === "Connect hosted")`)
}

// TestMCPServerBrowse: Browse on a connected server lists its resources and prompts; a
// resource opens to its text.
func TestMCPServerBrowse(t *testing.T) {
	peer := mcp.NewServer(&mcp.Implementation{Name: "docs", Version: "1"}, nil)
	peer.AddResource(&mcp.Resource{URI: "note://readme", Name: "readme", Title: "Read me", MIMEType: "text/markdown"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/markdown", Text: "# Hello from the resource"}}}, nil
		})
	peer.AddPrompt(&mcp.Prompt{Name: "review", Description: "Review a change."},
		func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{}, nil
		})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return peer }, nil))
	t.Cleanup(ts.Close)
	var m *mcpclient.Manager
	f := newFixtureWith(t, func(f *fixture, cfg *server.Config) {
		m = mcpclient.New(mcpclient.Config{Servers: []mcpclient.ServerConfig{{Name: "docs", URL: ts.URL, Type: "http", File: "mcp.json"}}}, nil,
			mcpclient.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		m.Start(ctx)
		cfg.Host.Sources = append([]host.ToolSource{}, m.Sources()...)
	})
	t.Cleanup(m.Close)
	f.open("#/settings")
	f.clickText(`tr[data-server="docs"]`, "Browse docs")
	f.waitText(".mcp-catalog .mcp-prompts", "review — Review a change.")
	f.clickText(`.mcp-catalog li[data-uri="note://readme"]`, "Read me")
	f.waitText(".mcp-catalog .mcp-resource-text", "# Hello from the resource")
}

// TestAttachMCPResource: the composer's Attach resource lists the connected server's
// resources; the picked one shows as a chip, goes with the message (read by the server at
// send time), reaches the model as a block naming its URI, and is drawn in the user's
// message (its text unfolds) — also after a reload, from the store. A resource the server
// fails to read refuses the message with an error naming it, and the typed text stays.
func TestAttachMCPResource(t *testing.T) {
	peer := mcp.NewServer(&mcp.Implementation{Name: "docs", Version: "1"}, nil)
	peer.AddResource(&mcp.Resource{URI: "note://readme", Name: "readme", Title: "Read me", MIMEType: "text/markdown"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/markdown", Text: "# Hello from the resource"}}}, nil
		})
	peer.AddResource(&mcp.Resource{URI: "note://broken", Name: "broken", Title: "Broken"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return nil, errors.New("disk on fire")
		})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return peer }, nil))
	t.Cleanup(ts.Close)
	var m *mcpclient.Manager
	f := newFixtureWith(t, func(f *fixture, cfg *server.Config) {
		m = mcpclient.New(mcpclient.Config{Servers: []mcpclient.ServerConfig{{Name: "docs", URL: ts.URL, Type: "http", File: "mcp.json"}}}, nil,
			mcpclient.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		m.Start(ctx)
		cfg.Host.Sources = append([]host.ToolSource{}, m.Sources()...)
	})
	t.Cleanup(m.Close)
	s := f.session("resources")
	f.open("#/s/" + s.ID)
	f.waitJS("the message box", `document.querySelector("#composer-input") !== null`)

	// A read the server fails: the message is refused, naming the resource; the text stays.
	f.click("#attach-resource")
	f.clickText(`dialog[open] li[data-uri="note://broken"]`, "Broken")
	f.waitJS("the chip", `document.querySelector('.composer-attachments .attachment-resource[data-uri="note://broken"]') !== null`)
	f.typeInto("#composer-input", "What does it say?\n")
	f.waitText(".composer .error", "resources/read note://broken")
	if got := f.eval(`document.querySelector("#composer-input").value.trim()`); got != "What does it say?" {
		t.Errorf("the composer holds %q after the refusal, want the text typed", got)
	}
	f.click(`.attachment-resource[data-uri="note://broken"] button`)

	f.click("#attach-resource")
	f.waitText("dialog[open] .resource-group", "docs")
	f.shot("attach-resource-picker")
	f.clickText(`dialog[open] li[data-uri="note://readme"]`, "Read me")
	f.waitJS("the chip", `document.querySelectorAll(".composer-attachments .attachment-resource").length === 1`)
	f.fake.Push(text("It greets you."))
	f.click("#send")
	f.waitText(".message.assistant", "It greets you.")
	f.waitText(".message.user .part-resource", "note://readme")
	f.waitText(".message.user .part-resource", "MCP server docs")
	if got := f.eval(`String(document.querySelectorAll(".composer-attachments .attachment").length)`); got != "0" {
		t.Errorf("%s attachments left in the composer after sending, want 0", got)
	}
	f.click(".message.user .part-resource summary")
	f.waitText(".message.user .part-resource .resource-text", "# Hello from the resource")
	f.shot("attach-resource-sent")

	reqs := f.fake.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests to the model, want 1 (the refused message must not reach it)", len(reqs))
	}
	if want := `<resource server=\"docs\" uri=\"note://readme\" mimeType=\"text/markdown\">\n# Hello from the resource\n</resource>`; !strings.Contains(string(reqs[0].Body), want) {
		t.Errorf("the model's request lacks the resource block: %.600s", reqs[0].Body)
	}

	if err := f.b.Do(20*time.Second, chromedp.Reload()); err != nil {
		t.Fatal(err)
	}
	f.waitText(".message.assistant", "It greets you.")
	f.waitText(".message.user .part-resource", "note://readme")
}

// TestAddMCPServerForm: Settings → MCP servers → "Add MCP server" opens a form; a mistake
// is said in words in the form (a name already used, an environment line without "=");
// a stdio server with arguments, environment and hosts is written to $JEAN2_HOME/mcp.json
// and listed, and an HTTP server by its URL (issue 24, point 13).
func TestAddMCPServerForm(t *testing.T) {
	f := newFixture(t)
	file := filepath.Join(f.home, "mcp.json")
	if err := os.WriteFile(file, []byte(`{"mcpServers": {"taken": {"url": "https://mcp.example.com/mcp"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	f.open("#/settings")
	f.waitText(`tr[data-server="taken"]`, "not started")
	f.clickText(".mcp-servers + .buttons", "Add MCP server")
	f.waitJS("the form", `!!document.querySelector("dialog[open] #mcp-add-name")`)
	if got := f.eval(`document.activeElement.id`); got != "mcp-add-name" {
		t.Errorf("focus on %q, want the name field", got)
	}
	f.typeInto("#mcp-add-name", "taken")
	f.typeInto("#mcp-add-command", "npx")
	f.typeInto("#mcp-add-args", "-y\n@modelcontextprotocol/server-filesystem\n/tmp")
	f.typeInto("#mcp-add-env", "DEBUG")
	f.clickText("dialog[open]", "Add")
	f.waitText(`dialog[open] .error`, "Environment line 1: write NAME=value.")
	f.eval(`(() => { document.querySelector("#mcp-add-env").value = ""; return ""; })()`)
	f.typeInto("#mcp-add-env", "DEBUG=1\nLANG=C.UTF-8")
	f.typeInto("#mcp-add-network", "api.github.com")
	f.clickText("dialog[open]", "Add")
	f.waitText(`dialog[open] .error`, "already lists a server named taken; choose another name")
	f.shot("mcp-add-form-error")
	f.eval(`(() => { document.querySelector("#mcp-add-name").value = ""; return ""; })()`)
	f.typeInto("#mcp-add-name", "files")
	f.clickText("dialog[open]", "Add")
	f.waitJS("the form closed", `!document.querySelector("dialog[open]")`)
	f.waitText(`tr[data-server="files"]`, "not started")
	f.waitText(`tr[data-server="files"] .mcp-error`, "reads the file again within a few seconds")
	f.shot("mcp-add-listed")

	var written struct {
		Servers map[string]mcpclient.ServerConfig `json:"mcpServers"`
	}
	data, _ := os.ReadFile(file)
	if err := json.Unmarshal(data, &written); err != nil {
		t.Fatal(err)
	}
	got := written.Servers["files"]
	if got.Command != "npx" || strings.Join(got.Args, " ") != "-y @modelcontextprotocol/server-filesystem /tmp" ||
		got.Env["DEBUG"] != "1" || got.Env["LANG"] != "C.UTF-8" || strings.Join(got.Network, ",") != "api.github.com" || written.Servers["taken"].URL == "" {
		t.Fatalf("mcp.json: %s", data)
	}

	// An HTTP server: its URL only.
	f.clickText(".mcp-servers + .buttons", "Add MCP server")
	f.waitJS("the form", `!!document.querySelector("dialog[open] #mcp-add-name")`)
	f.typeInto("#mcp-add-name", "web")
	f.eval(`(() => { const k = document.querySelector("#mcp-add-kind"); k.value = "http"; k.dispatchEvent(new Event("change")); return ""; })()`)
	f.waitJS("the URL field", `!document.querySelector(".mcp-add-http").hidden && document.querySelector(".mcp-add-stdio").hidden`)
	f.typeInto("#mcp-add-url", "https://mcp.example.org/mcp")
	f.clickText("dialog[open]", "Add")
	f.waitText(`tr[data-server="web"]`, "https://mcp.example.org/mcp")
}
