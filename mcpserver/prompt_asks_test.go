package mcpserver_test

import (
	"context"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// writeAskingPrompts saves a prompt and a skill whose arguments are asked for when missing.
func writeAskingPrompts(t *testing.T, r *rig) {
	home := r.h.Layout().Home
	write(t, filepath.Join(home, "prompts", "brief.yaml"), `description: Brief someone.
arguments:
  - name: context
    required: true
    ask: What context should the prompt use?
  - name: tone
    ask:
      type: single_select
      question: Which tone?
      options: [{label: Warm, value: warm}, {label: Dry, value: dry}]
  - {name: who}
messages:
  - text: Brief $who on $context, $tone.
`)
	write(t, filepath.Join(home, "skills", "standup", "SKILL.md"), "---\ndescription: Stand-up notes.\narguments:\n  - name: team\n    ask: {type: text, question: \"Which team?\"}\n---\nNotes for $team.\n")
}

// On 2026-07-28 a prompt whose asked-for arguments are missing answers with an
// input-required result, one elicitation per argument keyed by its name; the retry with
// the answers gets the prompt, and given arguments are not asked for.
func TestPromptsAskForMissingArguments(t *testing.T) {
	r := newRig(t)
	writeAskingPrompts(t, r)
	cs := roundsClient(r, nil)
	ctx := context.Background()

	if p := listPrompts(t, cs)["brief"]; p == nil || p.Arguments[0].Required {
		t.Fatalf("an asked-for argument is not required of the client: %s", toJSON(p))
	}
	first, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "brief", Arguments: map[string]string{"who": "Ann"}})
	if err != nil || !first.NeedsInput() || len(first.InputRequests) != 2 {
		t.Fatalf("first round: %v %s", err, toJSON(first))
	}
	ep, ok := first.InputRequests["context"].(*mcp.ElicitParams)
	if !ok || ep.Message != "Prompt brief asks: What context should the prompt use?" ||
		!strings.Contains(toJSON(ep.RequestedSchema), `"required":["context"]`) {
		t.Fatalf("the context question: %s", toJSON(first.InputRequests["context"]))
	}
	answers := mcp.InputResponseMap{
		"context": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"context": "the launch"}},
		"tone":    &mcp.ElicitResult{Action: "accept", Content: map[string]any{"tone": "dry"}},
	}
	last, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "brief", Arguments: map[string]string{"who": "Ann"}, InputResponses: answers})
	if err != nil || last.NeedsInput() || len(last.Messages) != 1 {
		t.Fatalf("retry: %v %s", err, toJSON(last))
	}
	if got := last.Messages[0].Content.(*mcp.TextContent).Text; got != "Brief Ann on the launch, dry." {
		t.Errorf("the prompt: %q", got)
	}

	given, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "standup", Arguments: map[string]string{"team": "web"}})
	if err != nil || given.NeedsInput() || given.Messages[0].Content.(*mcp.TextContent).Text != "Notes for web." {
		t.Fatalf("a skill's argument given: %v %s", err, toJSON(given))
	}
	asked, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "standup"})
	if err != nil || asked.InputRequests["team"] == nil {
		t.Fatalf("a skill's argument missing: %v %s", err, toJSON(asked))
	}

	declined := mcp.InputResponseMap{"context": &mcp.ElicitResult{Action: "decline"}, "tone": &mcp.ElicitResult{Action: "decline"}}
	_, err = cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "brief", InputResponses: declined})
	if err == nil || !strings.Contains(err.Error(), `the argument "context" is required, and the person did not give it (decline)`) {
		t.Errorf("a required argument declined: %v", err)
	}
}

// A client of 2025-11-25 is asked with elicitation/create requests; one that declared no
// elicitation is not asked, and misses a required argument as without an ask.
func TestPromptsAskClassicClients(t *testing.T) {
	r := newRig(t)
	writeAskingPrompts(t, r)
	var asked atomic.Int32
	cs := r.connect(classic, &mcp.ClientOptions{
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked.Add(1)
			if strings.Contains(req.Params.Message, "Which tone?") {
				return &mcp.ElicitResult{Action: "cancel"}, nil
			}
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"context": "the move"}}, nil
		},
	})
	text, err := promptText(t, cs, "brief", map[string]string{"who": "Bo"})
	if err != nil || text != "Brief Bo on the move, ." || asked.Load() != 2 {
		t.Fatalf("classic: %v %q, %d questions", err, text, asked.Load())
	}

	mute := r.connect(classic, nil)
	if _, err := promptText(t, mute, "brief", nil); err == nil || !strings.Contains(err.Error(), `the argument "context" is required`) {
		t.Fatalf("no elicitation: %v", err)
	}
	if text, err := promptText(t, mute, "standup", nil); err != nil || text != "Notes for ." {
		t.Fatalf("no elicitation, an optional argument: %v %q", err, text)
	}
}
