package tool

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"testing"

	"github.com/jean2/jean2/internal/jsonrpc"
)

// An execute that reaches a worker after shutdown is refused as not started, so the host
// can send it to another worker. Over a connection the two requests race (each is served
// on its own goroutine), so the state is set here directly.
func TestExecuteAfterShutdownIsRefusedAsNotStarted(t *testing.T) {
	tl := Func{Def: Definition{Name: "late", Description: "d", InputSchema: json.RawMessage(`{"type":"object"}`)},
		Run: func(context.Context, *Context, json.RawMessage) Result {
			t.Error("the call ran")
			return Success(1)
		}}
	s := newServer(tl, slog.New(slog.DiscardHandler))
	s.initialized, s.stopping = true, true
	_, err := s.execute(context.Background(), json.RawMessage(`{"callId":"late","input":{},"context":{}}`))
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInternalError || rpcErr.Message != "the worker is stopping and did not start this call" ||
		string(rpcErr.Data) != `{"workerExiting":true,"notStarted":true}` {
		t.Errorf("error %v (%+v)", err, rpcErr)
	}
}
