package server

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/mcpclient"
	"github.com/jean2/jean2/provider/providertest"
	"github.com/jean2/jean2/store"
)

// A resource of an imported MCP server (a real Go SDK server over streamable HTTP) attached
// to a message is read at send time and stored as resource parts; its text (named by its
// URI) and its image reach the request the provider receives. Hostile and broken cases are
// refused with errors that name the resource, and nothing is stored: a resource over the
// cap, a read the server fails, a server not configured, one not connected, one of another
// workspace, and an attachment that names nothing.
func TestAttachedMCPResourceReachesTheModel(t *testing.T) {
	png := append([]byte("\x89PNG\r\n\x1a\n"), bytes.Repeat([]byte{7}, 64)...)
	peer := mcp.NewServer(&mcp.Implementation{Name: "docs", Version: "1"}, nil)
	text := func(uri, mime, body string) mcp.ResourceHandler {
		return func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: mime, Text: body}}}, nil
		}
	}
	peer.AddResource(&mcp.Resource{URI: "note://readme", Name: "readme", MIMEType: "text/markdown"}, text("note://readme", "text/markdown", "# Hello from docs"))
	peer.AddResource(&mcp.Resource{URI: "img://logo", Name: "logo", MIMEType: "image/png"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "img://logo", MIMEType: "image/png", Blob: png}}}, nil
		})
	peer.AddResource(&mcp.Resource{URI: "note://huge", Name: "huge"}, text("note://huge", "text/plain", strings.Repeat("x", store.MaxResourceBytes+1)))
	peer.AddResource(&mcp.Resource{URI: "note://broken", Name: "broken"},
		func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return nil, errors.New("disk on fire")
		})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return peer }, nil))
	defer ts.Close()
	f := newFixture(t)
	m := mcpclient.New(mcpclient.Config{Servers: []mcpclient.ServerConfig{
		{Name: "docs", URL: ts.URL, Type: "http", File: "mcp.json"},
		{Name: "down", URL: "http://127.0.0.1:1/mcp", Type: "http", File: "mcp.json"},
	}}, nil, mcpclient.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	defer m.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	m.Start(ctx)
	f.cfg.Host.Sources = append([]host.ToolSource{}, m.Sources()...)
	f.start()
	for {
		if state, _ := m.Servers()[0].Status(); state == mcpclient.StateConnected {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("docs never connected")
		}
		time.Sleep(20 * time.Millisecond)
	}
	_, ses := f.session()
	turns := "/api/sessions/" + ses.ID + "/turns"

	f.fake.Push(providertest.OpenAIText("test-model", "Read it."))
	f.call("POST", turns, map[string]any{"text": "What do these say?", "resources": []map[string]string{
		{"server": "docs", "uri": "note://readme"}, {"server": "docs", "uri": "img://logo"},
	}}, 202, nil)
	var msgs struct{ Messages []store.Message }
	for {
		f.call("GET", "/api/sessions/"+ses.ID+"/messages", nil, 200, &msgs)
		if len(msgs.Messages) == 2 && msgs.Messages[1].Status == store.StatusComplete {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the turn did not finish: %+v", msgs.Messages)
		}
		time.Sleep(20 * time.Millisecond)
	}
	user := msgs.Messages[0]
	if len(user.Parts) != 2 || user.Parts[0].Kind != store.PartResource || user.Parts[0].Text != "# Hello from docs" ||
		user.Parts[0].Args != `{"server":"docs","uri":"note://readme"}` || user.Parts[0].MediaType != "text/markdown" ||
		user.Parts[1].Kind != store.PartResource || !bytes.Equal(user.Parts[1].Data, png) {
		t.Fatalf("user message %+v", user)
	}
	reqs := f.fake.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d provider requests, want 1", len(reqs))
	}
	body := string(reqs[0].Body)
	for _, want := range []string{
		`<resource server=\"docs\" uri=\"note://readme\" mimeType=\"text/markdown\">\n# Hello from docs\n</resource>`,
		"data:image/png;base64," + base64.StdEncoding.EncodeToString(png),
	} {
		if !strings.Contains(body, want) {
			t.Fatalf("the provider's request lacks %s:\n%s", want, body)
		}
	}

	for _, c := range []struct {
		name   string
		refs   []map[string]string
		status int
		code   string
		want   string
	}{
		{"huge", []map[string]string{{"server": "docs", "uri": "note://huge"}}, 413, "too_large",
			"resources[0]: note://huge of MCP server docs is 1048577 bytes, more than the 1048576 (1 MiB)"},
		{"server error", []map[string]string{{"server": "docs", "uri": "note://readme"}, {"server": "docs", "uri": "note://broken"}}, 502, "unavailable",
			"resources[1]: MCP server docs: resources/read note://broken"},
		{"unknown resource", []map[string]string{{"server": "docs", "uri": "note://nope"}}, 502, "unavailable", "resources/read note://nope"},
		{"unknown server", []map[string]string{{"server": "gone", "uri": "note://readme"}}, 400, "bad_request",
			`no MCP server \"gone\" in $JEAN2_HOME/mcp.json, so note://readme cannot be read`},
		{"not connected", []map[string]string{{"server": "down", "uri": "note://readme"}}, 409, "conflict", "connect it first"},
		{"other workspace", []map[string]string{{"server": "docs", "workspaceId": "ws_other", "uri": "note://readme"}}, 400, "bad_request",
			"is not one this session"},
		{"no uri", []map[string]string{{"server": "docs"}}, 400, "bad_request", "must name the MCP server and the resource's uri"},
	} {
		data := f.call("POST", turns, map[string]any{"text": "again", "resources": c.refs}, c.status, nil)
		if code := errorCode(t, data); code != c.code || !strings.Contains(string(data), c.want) {
			t.Errorf("%s: %s, want code %s and %q", c.name, data, c.code, c.want)
		}
	}
	f.call("GET", "/api/sessions/"+ses.ID+"/messages", nil, 200, &msgs)
	if len(msgs.Messages) != 2 || len(f.fake.Requests()) != 1 {
		t.Fatalf("refused messages were stored or sent: %d messages, %d requests", len(msgs.Messages), len(f.fake.Requests()))
	}

	// An edit attaches resources as a turn does: read again, now.
	f.fake.Push(providertest.OpenAIText("test-model", "Edited."))
	f.call("POST", "/api/sessions/"+ses.ID+"/messages/"+user.ID+"/resend", map[string]any{"text": "Only the readme, please.",
		"resources": []map[string]string{{"server": "docs", "uri": "note://readme"}}}, 202, nil)
	for {
		f.call("GET", "/api/sessions/"+ses.ID+"/messages", nil, 200, &msgs)
		if len(msgs.Messages) == 2 && msgs.Messages[0].Content == "Only the readme, please." && msgs.Messages[1].Status == store.StatusComplete {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the edit's turn did not finish: %+v", msgs.Messages)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if parts := msgs.Messages[0].Parts; len(parts) != 1 || parts[0].Kind != store.PartResource || parts[0].Text != "# Hello from docs" {
		t.Fatalf("the edited message's parts: %+v", parts)
	}
	if reqs := f.fake.Requests(); len(reqs) != 2 || !strings.Contains(string(reqs[1].Body), "# Hello from docs") || strings.Contains(string(reqs[1].Body), "image/png") {
		t.Fatalf("the edit's request (%d requests): %s", len(reqs), reqs[len(reqs)-1].Body)
	}
}
