package mcpserver_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/jean2/jean2/mcpserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A client on 2026-07-28 is served statelessly: it negotiates that revision over HTTP (not
// the 2025-11-25 fallback a sessions-only handler forces), gets no session id, and works
// against two replicas behind a round-robin balancer; a 2025-11-25 client keeps its session.
func TestStatelessHTTPBesideSessions(t *testing.T) {
	r := newRig(t)
	other, err := mcpserver.New(r.h, r.opts)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	replicas := []http.Handler{r.srv.HTTPHandler(), other.HTTPHandler()}
	var n atomic.Int64
	var sessionIDs atomic.Int64
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Header.Get("Mcp-Session-Id") != "" {
			sessionIDs.Add(1)
		}
		replicas[n.Add(1)%2].ServeHTTP(w, req)
	}))
	defer front.Close()

	cs, err := mcp.NewClient(&mcp.Implementation{Name: "stateless-test", Version: "1"}, nil).
		Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: front.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %s over HTTP, want 2026-07-28", v)
	}
	for i := range 6 {
		if res := call(t, cs, "greet", map[string]string{"name": "replica"}); !strings.Contains(text(res), "hello replica") {
			t.Fatalf("call %d: %s", i, toJSON(res))
		}
	}
	if got := sessionIDs.Load(); got != 0 {
		t.Fatalf("%d stateless requests carried a session id", got)
	}

	// A classic client on one replica keeps its session (and its asks as requests).
	single := httptest.NewServer(replicas[0])
	defer single.Close()
	classicCS, err := mcp.NewClient(&mcp.Implementation{Name: "classic", Version: "1"}, nil).
		Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: single.URL}, &mcp.ClientSessionOptions{ProtocolVersion: classic})
	if err != nil {
		t.Fatal(err)
	}
	defer classicCS.Close()
	if classicCS.ID() == "" || classicCS.InitializeResult().ProtocolVersion != classic {
		t.Fatalf("classic client: session %q, revision %s", classicCS.ID(), classicCS.InitializeResult().ProtocolVersion)
	}
	if res := call(t, classicCS, "greet", map[string]string{"name": "session"}); !strings.Contains(text(res), "hello session") {
		t.Fatal(toJSON(res))
	}
}
