package mcpclient

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The connection that follows tasks passes everything else through untouched, under -race:
// a server without tasks is listed and called as before, its progress reaches the client
// during the call, and a cancelled call reaches the server's handler.
func TestTaskConnIsTransparent(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "peer", Version: "1"}, nil)
	aborted := make(chan error, 1)
	srv.AddTool(&mcp.Tool{Name: "step", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: 1, Message: "one"})
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "stepped"}}}, nil
		})
	srv.AddTool(&mcp.Tool{Name: "wait", InputSchema: json.RawMessage(`{"type":"object"}`)},
		func(ctx context.Context, _ *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			<-ctx.Done()
			aborted <- ctx.Err()
			return nil, ctx.Err()
		})
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ss.Close()
	progress := make(chan string, 1)
	client := mcp.NewClient(&mcp.Implementation{Name: "jean2", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) { progress <- req.Params.Message },
	})
	cs, err := client.Connect(context.Background(), &taskTransport{inner: ct}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if tools, err := cs.ListTools(context.Background(), nil); err != nil || len(tools.Tools) != 2 {
		t.Fatalf("tools/list: %v %v", tools, err)
	}
	params := &mcp.CallToolParams{Name: "step", Arguments: map[string]any{}}
	params.SetProgressToken("p1")
	res, err := cs.CallTool(context.Background(), params)
	if err != nil || res.Content[0].(*mcp.TextContent).Text != "stepped" {
		t.Fatalf("call: %v %v", res, err)
	}
	select {
	case m := <-progress:
		if m != "one" {
			t.Fatalf("progress %q", m)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("no progress")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "wait", Arguments: map[string]any{}}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("cancelled call: %v", err)
	}
	select {
	case <-aborted:
	case <-time.After(5 * time.Second):
		t.Fatal("the server's handler was not cancelled")
	}
}

// A server whose tool requires tasks, written by hand on an in-memory transport: the
// go-sdk client's plain call goes out with `task`, jean2 polls the task and hands the
// go-sdk its result; a call that times out has its task cancelled.
func TestTaskConnFollowsTasks(t *testing.T) {
	ct, st := mcp.NewInMemoryTransports()
	sconn, err := st.Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer sconn.Close()
	sawTask := make(chan string, 4)
	cancelled := make(chan string, 1)
	go func() {
		polls := 0
		for {
			msg, err := sconn.Read(context.Background())
			if err != nil {
				return
			}
			req, ok := msg.(*jsonrpc.Request)
			if !ok || !req.ID.IsValid() {
				continue
			}
			var p struct {
				Name   string          `json:"name"`
				Task   json.RawMessage `json:"task"`
				TaskID string          `json:"taskId"`
			}
			_ = json.Unmarshal(req.Params, &p)
			task := func(id, status string) string {
				return `{"taskId":"` + id + `","status":"` + status + `","ttl":null,"createdAt":"2026-01-01T00:00:00Z","lastUpdatedAt":"2026-01-01T00:00:00Z","pollInterval":10}`
			}
			var result string
			switch req.Method {
			case "initialize":
				result = `{"protocolVersion":"2025-11-25","serverInfo":{"name":"hand","version":"1"},"capabilities":{"tools":{},"tasks":{"cancel":{},"requests":{"tools":{"call":{}}}}}}`
			case "tools/list":
				result = `{"tools":[{"name":"job","inputSchema":{"type":"object"},"execution":{"taskSupport":"required"}},{"name":"forever","inputSchema":{"type":"object"},"execution":{"taskSupport":"required"}}]}`
			case "tools/call":
				sawTask <- p.Name + " " + string(p.Task)
				result = `{"task":` + task(p.Name, "working") + `}`
			case "tasks/get":
				polls++
				status := "working"
				if p.TaskID == "job" && polls > 2 {
					status = "completed"
				}
				result = task(p.TaskID, status)
			case "tasks/result":
				result = `{"content":[{"type":"text","text":"done by task ` + p.TaskID + `"}]}`
			case "tasks/cancel":
				cancelled <- p.TaskID
				result = task(p.TaskID, "cancelled")
			default:
				result = `{}`
			}
			_ = sconn.Write(context.Background(), &jsonrpc.Response{ID: req.ID, Result: json.RawMessage(result)})
		}
	}()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "jean2", Version: "1"}, nil).
		Connect(context.Background(), &taskTransport{inner: ct}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, err := cs.ListTools(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "job", Arguments: map[string]any{}})
	if err != nil || res.Content[0].(*mcp.TextContent).Text != "done by task job" {
		t.Fatalf("job: %v %v", res, err)
	}
	if got := <-sawTask; got != "job {}" {
		t.Fatalf("the call went out as %q, want it with task {}", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "forever", Arguments: map[string]any{}}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("forever: %v", err)
	}
	select {
	case id := <-cancelled:
		if id != "forever" {
			t.Fatalf("cancelled %q", id)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the timed-out call's task was not cancelled")
	}
}
