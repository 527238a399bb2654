package mcpserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jean2/jean2/tool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// askTogether asks all of asks at once, as a tool's Promise.all does, and answers them in order.
func askTogether(ctx context.Context, c *tool.Context, asks []tool.Ask) tool.Result {
	answers := make([]json.RawMessage, len(asks))
	errs := make([]error, len(asks))
	var wg sync.WaitGroup
	for i, a := range asks {
		wg.Add(1)
		go func() {
			defer wg.Done()
			answers[i], errs[i] = c.Asker.Ask(ctx, a)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return tool.Errorf("%v", err)
	}
	return tool.Success(answers)
}

// roundsClient is a client on 2026-07-28 that answers input requests by hand.
func roundsClient(r *rig, caps *mcp.ClientCapabilities) *mcp.ClientSession {
	return r.connect(newest, &mcp.ClientOptions{
		Capabilities:       caps,
		MultiRoundTrip:     &mcp.MultiRoundTripOptions{Disabled: true},
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) { return nil, errors.New("unused") },
	})
}

// An ask's key names its input request, and a question's name its form field.
func TestAskKeysAndFieldNames(t *testing.T) {
	r := newRig(t)
	cs := roundsClient(r, nil)
	args := obj(`{"asks":[{"type":"text","question":"Name?","key":"user_name","name":"name"},` +
		`{"type":"form","question":"More","questions":[{"type":"text","question":"Town?","name":"town"},{"type":"confirm","question":"Sure?"}]}]}`)
	first := call(t, cs, "asker", args)
	ep, ok := first.InputRequests["user_name"].(*mcp.ElicitParams)
	if !ok || !strings.Contains(toJSON(ep.RequestedSchema), `"required":["name"]`) {
		t.Fatalf("first round: %s", toJSON(first))
	}
	second, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "asker", Arguments: args, RequestState: first.RequestState,
		InputResponses: mcp.InputResponseMap{"user_name": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Grace"}}}})
	if err != nil || len(second.InputRequests) != 1 {
		t.Fatalf("second round: %v %s", err, toJSON(second))
	}
	var key string
	for k, v := range second.InputRequests {
		key = k
		if schema := toJSON(v.(*mcp.ElicitParams).RequestedSchema); !strings.Contains(schema, `"required":["town","q2"]`) {
			t.Fatalf("the form's fields: %s", schema)
		}
	}
	if key != "ask-1" {
		t.Errorf("an ask with no key travels as %q, want ask-1", key)
	}
	last, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "asker", Arguments: args, RequestState: second.RequestState,
		InputResponses: mcp.InputResponseMap{key: &mcp.ElicitResult{Action: "accept", Content: map[string]any{"town": "Paris", "q2": true}}}})
	want := `{"success":true,"result":["Grace",{"type":"form","answers":[{"question":"Town?","answer":"Paris"},{"question":"Sure?","answer":true}]}]}`
	if err != nil || text(last) != want {
		t.Fatalf("last round: %v %s", err, toJSON(last))
	}
}

// A call that arrives with answers under its asks' keys (and no requestState) uses them
// without a round; keys no ask has are ignored; an ask with no key still takes a round.
func TestAsksAnsweredInAdvance(t *testing.T) {
	r := newRig(t)
	cs := roundsClient(r, nil)
	ask := `{"type":"text","question":"Name?","key":"user_name","name":"name"}`
	advance := mcp.InputResponseMap{
		"user_name": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Alice"}},
		"extra":     &mcp.ElicitResult{Action: "accept", Content: map[string]any{"foo": "bar"}},
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "asker", Arguments: obj(`{"asks":[` + ask + `]}`), InputResponses: advance})
	if err != nil || res.NeedsInput() || text(res) != `{"success":true,"result":["Alice"]}` {
		t.Fatalf("answered in advance: %v %s", err, toJSON(res))
	}
	// The answer is used once: the same key asked again takes a round.
	res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "asker", Arguments: obj(`{"asks":[` + ask + `,` + ask + `]}`), InputResponses: advance})
	if err != nil || !res.NeedsInput() || res.InputRequests["user_name"] == nil {
		t.Fatalf("the key asked twice: %v %s", err, toJSON(res))
	}
}

// A client_capability ask for roots is the client's roots/list: an input request on
// 2026-07-28, a request on 2025-11-25, and an error for a client that declared no roots.
func TestRootsAsk(t *testing.T) {
	r := newRig(t)
	args := obj(`{"asks":[{"target":"client","type":"client_capability","capability":"roots","key":"client_roots"}]}`)
	want := `{"success":true,"result":[{"type":"client_capability","capability":"roots","result":{"roots":[{"name":"Test Root","uri":"file:///test/root"}]}}]}`

	cs := roundsClient(r, nil) // the go-sdk client declares roots by default
	first := call(t, cs, "asker", args)
	if _, ok := first.InputRequests["client_roots"].(*mcp.ListRootsParams); !ok {
		t.Fatalf("first round: %s", toJSON(first))
	}
	last, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "asker", Arguments: args, RequestState: first.RequestState,
		InputResponses: mcp.InputResponseMap{"client_roots": &mcp.ListRootsResult{Roots: []*mcp.Root{{URI: "file:///test/root", Name: "Test Root"}}}}})
	if err != nil || text(last) != want {
		t.Fatalf("rounds: %v %s", err, toJSON(last))
	}

	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	client.AddRoots(&mcp.Root{URI: "file:///test/root", Name: "Test Root"})
	ct, st := mcp.NewInMemoryTransports()
	ss, err := r.srv.Connect(context.Background(), st)
	if err != nil {
		t.Fatal(err)
	}
	classicSession, err := client.Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: classic})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = classicSession.Close(); _ = ss.Wait() })
	if res := call(t, classicSession, "asker", args); text(res) != want {
		t.Fatalf("classic: %s", toJSON(res))
	}

	none := roundsClient(r, &mcp.ClientCapabilities{})
	if res := call(t, none, "asker", args); !res.IsError || !strings.Contains(text(res), "did not declare the roots capability") {
		t.Fatalf("no roots declared: %s", toJSON(res))
	}
}

// Asks made together travel in one round, each under its key (the window is a second here,
// the default 20 ms).
func TestAsksTogetherTravelInOneRound(t *testing.T) {
	// A machine at load 20 scheduled the three asks more than 20 ms apart.
	r := newRig(t, func(r *rig) { r.opts.AskGatherWindow = time.Second })
	cs := roundsClient(r, nil)
	args := obj(`{"together":true,"asks":[{"type":"text","question":"Name?","key":"user_name"},` +
		`{"target":"client","type":"client_capability","capability":"roots","key":"client_roots"},{"type":"confirm","question":"Go?"}]}`)
	first := call(t, cs, "asker", args)
	if len(first.InputRequests) != 3 || first.InputRequests["user_name"] == nil || first.InputRequests["client_roots"] == nil || first.InputRequests["ask-1"] == nil {
		t.Fatalf("one round of three: %s", toJSON(first))
	}
}
