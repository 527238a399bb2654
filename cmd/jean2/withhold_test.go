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
)

// keyEchoCLI is a CLI whose providers.json names MY_PROVIDER_KEY as a provider's key
// variable, whose environment and .env set it and two well-known keys, and whose tools
// folder holds key-echo, a tool that declares them all and returns what it received.
func keyEchoCLI(t *testing.T) (*cli, []string) {
	t.Helper()
	c := newCLI(t)
	copyDir(t, filepath.Join("testdata", "key-echo"), filepath.Join(c.home, "tools", "key-echo"))
	providers := `{"providers":[{"name":"mine","kind":"openai","baseUrl":"http://127.0.0.1:9/v1","apiKeyEnv":"MY_PROVIDER_KEY","model":"m"}]}`
	if err := os.WriteFile(filepath.Join(c.home, "providers.json"), []byte(providers), 0o600); err != nil {
		t.Fatal(err)
	}
	// The .env holds the key too: a providers.json key variable is withheld from both sources.
	if err := os.WriteFile(filepath.Join(c.home, ".env"), []byte("MY_PROVIDER_KEY=sk-dotenv-secret\nHARMLESS_SETTING=visible\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := append(c.env(), "MY_PROVIDER_KEY=sk-env-secret", "OPENAI_API_KEY=sk-openai-secret", "ANTHROPIC_API_KEY=sk-anthropic-secret")
	return c, env
}

func (c *cli) runEnv(env []string, args ...string) (string, string, int) {
	c.t.Helper()
	cmd := exec.Command(jean2Bin, args...)
	cmd.Env = env
	cmd.Dir = c.ws
	var out, errb strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		c.t.Fatal(err)
	}
	return out.String(), errb.String(), code
}

// checkNoKeys fails when text holds any of the secret values.
func checkNoKeys(t *testing.T, where, text string) {
	t.Helper()
	for _, secret := range []string{"sk-env-secret", "sk-dotenv-secret", "sk-openai-secret", "sk-anthropic-secret"} {
		if strings.Contains(text, secret) {
			t.Errorf("%s: a tool received the provider key %q:\n%s", where, secret, text)
		}
	}
}

// `tools run` must hand a tool neither the key variable providers.json names nor the
// well-known provider keys, from the environment or from .env, in ctx.env or in its process
// environment; a harmless declared variable still arrives.
func TestToolsRunWithholdsProviderKeys(t *testing.T) {
	c, env := keyEchoCLI(t)
	out, stderr, code := c.runEnv(env, "tools", "run", "key-echo", "--input", `{}`)
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	checkNoKeys(t, "tools run", out)
	if !strings.Contains(out, `"visible"`) {
		t.Fatalf("the harmless declared variable did not arrive, so the test proves nothing:\n%s", out)
	}
}

// `tools list --json` must say the key variables are withheld and not set for the tool.
func TestToolsListShowsProviderKeysWithheld(t *testing.T) {
	c, env := keyEchoCLI(t)
	out, stderr, code := c.runEnv(env, "tools", "list", "--json")
	if code != 0 {
		t.Fatalf("exit %d\n%s\n%s", code, out, stderr)
	}
	var tools []struct {
		Name string `json:"name"`
		Env  []struct {
			Name     string `json:"name"`
			Set      bool   `json:"set"`
			Withheld bool   `json:"withheld"`
		} `json:"env"`
	}
	err := json.Unmarshal([]byte(out), &tools)
	tools = withoutBuiltins(t, tools)
	if err != nil || len(tools) != 1 {
		t.Fatalf("list: %v\n%s", err, out)
	}
	for _, v := range tools[0].Env {
		wantWithheld := v.Name != "HARMLESS_SETTING"
		if v.Withheld != wantWithheld || v.Set == wantWithheld {
			t.Errorf("%s: set %v withheld %v, want withheld %v", v.Name, v.Set, v.Withheld, wantWithheld)
		}
	}
}

// `jean2 mcp` serves the same host: a tools/call of key-echo gets no key either.
func TestMCPWithholdsProviderKeys(t *testing.T) {
	c, env := keyEchoCLI(t)
	cmd := exec.Command(jean2Bin, "mcp", "--workspace", c.ws)
	cmd.Env = env
	cmd.Dir = c.ws
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
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
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"key-echo","arguments":{}}}`,
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
			Error  json.RawMessage `json:"error"`
		}
		if json.Unmarshal(sc.Bytes(), &m) != nil || string(m.ID) != "2" {
			continue
		}
		text := string(m.Result) + string(m.Error)
		checkNoKeys(t, "jean2 mcp", text)
		if !strings.Contains(text, `visible`) {
			t.Fatalf("the harmless declared variable did not arrive, so the test proves nothing:\n%s\n%s", text, stderr.String())
		}
		return
	}
	t.Fatalf("no answer to tools/call: %v\n%s", sc.Err(), stderr.String())
}
