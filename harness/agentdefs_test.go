package harness_test

import (
	"encoding/json"
	"testing"

	"github.com/jean2/jean2/harness"
)

// The agent's tools cost every request their definitions: measured here (docs/performance.md).
func TestAgentToolDefinitionBytes(t *testing.T) {
	total := 0
	for _, tl := range harness.AgentTools(t.TempDir(), nil) {
		d := tl.Definition()
		raw, _ := json.Marshal(map[string]any{"name": d.Name, "description": d.Description, "parameters": d.InputSchema})
		t.Logf("%s: %d bytes", d.Name, len(raw))
		total += len(raw)
	}
	t.Logf("all of them: %d bytes", total)
	if total > 4000 {
		t.Fatalf("the agent's tools take %d bytes of every request", total)
	}
}
