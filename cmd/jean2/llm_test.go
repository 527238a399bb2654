package main

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/provider/providertest"
)

const askLLMTool = `export const definition = { name: 'ask-llm', description: 'Ask the model.',
  inputSchema: { type: 'object', properties: { q: { type: 'string' } } } };
export async function execute(input, ctx) {
  const text = await ctx.llm.generateText({ prompt: input.q || 'hi' });
  return { success: true, result: { text } };
}
`

// ctx.llm works in jean2 tools run and jean2 mcp with the providers jean2 serve would use
// (here the environment's OPENAI_*), and the key still never reaches the tool.
func TestCtxLLMOutsideServe(t *testing.T) {
	if _, err := os.Stat("/usr/bin/node"); err != nil {
		t.Skip("node is not installed at /usr/bin/node")
	}
	c := newCLI(t)
	dir := filepath.Join(c.home, "tools", "ask-llm")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "tool.js"), []byte(askLLMTool), 0o644); err != nil {
		t.Fatal(err)
	}
	fake := providertest.NewOpenAI(t)
	fake.Key = "sk-llm-secret-0123"
	env := append(c.env(), "OPENAI_API_KEY="+fake.Key, "OPENAI_BASE_URL="+fake.BaseURL(), "OPENAI_MODEL=test-model", "JEAN2_NODE=/usr/bin/node", "JEAN2_RUNTIME=node")
	fake.Push(providertest.OpenAIText("test-model", "ANSWER-FROM-MODEL"))
	out, stderr, code := c.runEnv(env, "tools", "run", "ask-llm", "--input", `{"q":"say it"}`)
	if code != 0 || !strings.Contains(out, "ANSWER-FROM-MODEL") || strings.Contains(out, fake.Key) {
		t.Fatalf("tools run: exit %d\n%s\n%s", code, out, stderr)
	}
	if reqs := fake.Requests(); len(reqs) != 1 || !strings.Contains(string(reqs[0].Body), "say it") || !strings.Contains(string(reqs[0].Body), `"test-model"`) {
		t.Fatalf("requests %+v", reqs)
	}

	fake.Push(providertest.OpenAIText("test-model", "MCP-ANSWER"))
	cmd := exec.Command(jean2Bin, "mcp", "--workspace", c.ws)
	cmd.Env, cmd.Dir = env, c.ws
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	var serr strings.Builder
	cmd.Stderr = &serr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
	}()
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`,
		`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"ask-llm","arguments":{"q":"over mcp"}}}`,
	} {
		if _, err := stdin.Write([]byte(line + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil || string(m.ID) != "2" {
			continue
		}
		if !strings.Contains(string(m.Result), "MCP-ANSWER") {
			t.Fatalf("mcp tools/call: %s\n%s", m.Result, serr.String())
		}
		return
	}
	t.Fatalf("no answer to tools/call: %v\n%s", sc.Err(), serr.String())
}
