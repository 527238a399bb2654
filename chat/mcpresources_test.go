package chat

import (
	"context"
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
	"github.com/jean2/jean2/provider"
	"github.com/jean2/jean2/provider/providertest"
	"github.com/jean2/jean2/server"
)

// /attach lists the connected MCP server's resources and attaches one to the next message:
// the server reads it at send time (a real Go SDK MCP server over streamable HTTP), the
// model's request carries it, and the transcript names it under the message. A server the
// session cannot read is refused at /attach; /detach drops what is attached.
func TestAttachMCPResource(t *testing.T) {
	peer := mcp.NewServer(&mcp.Implementation{Name: "docs", Version: "1"}, nil)
	peer.AddResource(&mcp.Resource{URI: "note://readme", Name: "readme", Title: "Read me", MIMEType: "text/markdown"},
		func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, MIMEType: "text/markdown", Text: "# Hello from docs"}}}, nil
		})
	peerTS := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return peer }, nil))
	t.Cleanup(peerTS.Close)
	m := mcpclient.New(mcpclient.Config{Servers: []mcpclient.ServerConfig{{Name: "docs", URL: peerTS.URL, Type: "http", File: "mcp.json"}}}, nil,
		mcpclient.Options{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	t.Cleanup(m.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	m.Start(ctx)
	for {
		if state, _ := m.Servers()[0].Status(); state == mcpclient.StateConnected {
			break
		}
		if ctx.Err() != nil {
			t.Fatal("the MCP server never connected")
		}
		time.Sleep(20 * time.Millisecond)
	}

	home := t.TempDir()
	layout, err := host.LayoutFromEnv(func(k string) string {
		if k == "JEAN2_HOME" {
			return home
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := layout.Ensure(); err != nil {
		t.Fatal(err)
	}
	fake := providertest.NewOpenAI(t)
	env := map[string]string{"OPENAI_API_KEY": fake.Key, "OPENAI_BASE_URL": fake.BaseURL(), "OPENAI_MODEL": "test-model"}
	srv, err := server.Open(context.Background(), server.Config{
		Host:            host.Options{Layout: layout, Sources: m.Sources()},
		Getenv:          func(k string) string { return env[k] },
		ProviderOptions: &provider.Options{Retry: provider.Retry{MaxAttempts: 1}},
		Logger:          slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		_ = srv.Close(ctx)
		ts.Close()
	})
	if err := NewClient(ts.URL, srv.Token()).Call(context.Background(), "PATCH", "/api/settings", map[string]any{"autoTitle": false}, nil); err != nil {
		t.Fatal(err)
	}

	in, typed := io.Pipe()
	var out screen
	done := make(chan error, 1)
	go func() {
		done <- Run(context.Background(), Options{Server: ts.URL, Token: srv.Token(), Workspace: t.TempDir(), Stdin: in, Stdout: &out})
	}()
	typeLine := func(line string) {
		t.Helper()
		if _, err := io.WriteString(typed, line+"\n"); err != nil {
			t.Fatal(err)
		}
	}
	out.waitFor(t, "Type a message.")
	typeLine("/attach")
	out.waitFor(t, "/attach docs note://readme")
	typeLine("/attach gone note://readme")
	out.waitFor(t, `No MCP server "gone" for this session`)
	typeLine("/attach docs note://other")
	out.waitFor(t, "attached note://other of docs")
	typeLine("/detach")
	out.waitFor(t, "dropped 1 attached resource(s)")
	typeLine("/attach docs note://readme")
	out.waitFor(t, "attached note://readme of docs")

	fake.Push(providertest.OpenAIText("test-model", "It says hello."))
	typeLine("what does it say?")
	out.waitFor(t, "It says hello.")
	out.waitFor(t, "── done")
	reqs := fake.Requests()
	if len(reqs) != 1 {
		t.Fatalf("%d model requests, want 1", len(reqs))
	}
	body := string(reqs[0].Body)
	if want := `<resource server=\"docs\" uri=\"note://readme\" mimeType=\"text/markdown\">\n# Hello from docs\n</resource>`; !strings.Contains(body, want) ||
		strings.Contains(body, "note://other") {
		t.Fatalf("the model's request lacks the resource (or carries the dropped one):\n%s", body)
	}
	// The next message goes without it: attachments are for one message.
	fake.Push(providertest.OpenAIText("test-model", "Second answer."))
	typeLine("and now?")
	out.waitFor(t, "Second answer.")
	if got := strings.Count(string(fake.Requests()[1].Body), "# Hello from docs"); got != 1 {
		t.Fatalf("the resource went %d times in the second request (once, with its message, is right)", got)
	}
	typeLine("/quit")
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("Run did not return after /quit; the screen:\n%s", out.String())
	}

	// Going on with the session draws the message with what it carried.
	got := out.String()
	id := strings.Fields(got[strings.LastIndex(got, "--session ")+len("--session "):])[0]
	var again screen
	err = Run(context.Background(), Options{Server: ts.URL, Token: srv.Token(), Session: id, Stdin: strings.NewReader("/quit\n"), Stdout: &again})
	if err != nil {
		t.Fatalf("Run --session %s: %v", id, err)
	}
	if !strings.Contains(again.String(), "what does it say? [resource note://readme of docs, 17 B]") {
		t.Fatalf("the transcript does not name the resource under its message:\n%s", again.String())
	}
}
