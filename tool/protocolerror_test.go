package tool_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/jean2/jean2/tool"
)

// A typed handler's error that wraps a *ProtocolError fails the call with it; Check
// refuses the codes that are the server's own, an empty message, data that is not JSON.
func TestProtocolError(t *testing.T) {
	type in struct{}
	typed, err := tool.NewTyped(tool.Definition{Name: "down", Description: "d"}, func(context.Context, *tool.Context, in) (string, error) {
		return "", fmt.Errorf("reaching the backend: %w", &tool.ProtocolError{Code: -32603, Message: "the backend is down"})
	})
	if err != nil {
		t.Fatal(err)
	}
	res := typed.Execute(context.Background(), nil, nil).Normalize()
	if res.Success || res.ProtocolError == nil || res.ProtocolError.Code != -32603 || res.Error != "the backend is down" {
		t.Fatalf("typed: %+v", res)
	}
	if res := (tool.Result{Success: true, ProtocolError: &tool.ProtocolError{Code: 1, Message: "m"}}).Normalize(); res.Success || res.Error != "m" {
		t.Fatalf("a protocol error is a failure: %+v", res)
	}
	for _, c := range []struct {
		pe   tool.ProtocolError
		want string
	}{
		{tool.ProtocolError{Code: -32603, Message: "m"}, ""},
		{tool.ProtocolError{Code: 42, Message: "m", Data: []byte(`{"a":1}`)}, ""},
		{tool.ProtocolError{Message: "m"}, "code is missing"},
		{tool.ProtocolError{Code: -32601, Message: "m"}, "server's to give"},
		{tool.ProtocolError{Code: -32603}, "message is empty"},
		{tool.ProtocolError{Code: -32603, Message: "m", Data: []byte(`{`)}, "not valid JSON"},
	} {
		err := c.pe.Check()
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("%+v: %v, want %q", c.pe, err, c.want)
		}
	}
}

// taskAfterInput needs a tool that may be a task.
func TestTaskAfterInputNeedsTaskSupport(t *testing.T) {
	def := tool.Definition{Name: "x", Description: "d", InputSchema: []byte(`{"type":"object"}`), Execution: &tool.Execution{TaskAfterInput: true}}
	if err := def.Check(); err == nil || !strings.Contains(err.Error(), "taskAfterInput needs taskSupport") {
		t.Fatalf("without taskSupport: %v", err)
	}
	def.Execution.TaskSupport = tool.TaskOptional
	if err := def.Check(); err != nil {
		t.Fatalf("with taskSupport optional: %v", err)
	}
}
