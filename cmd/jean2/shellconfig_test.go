package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// config.json's "shell" settings reach the shell's commands: a variable set, one passed
// from the server's environment, the git identity; a provider key named there is refused
// with the reason.
func TestShellSettingsFromConfig(t *testing.T) {
	c := newCLI(t)
	cfg := `{"shell":{"env":{"FAVOURITE":"blue"},"passEnv":["PATH"],"gitName":"Cleo Config","gitEmail":"cleo@example.com","timeout":"90s","maxOutput":1000}}`
	if err := os.WriteFile(filepath.Join(c.home, "config.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	input, _ := json.Marshal(map[string]string{"command": `echo "$FAVOURITE"; git config user.name; git config user.email`})
	out, stderr, code := c.run("", "tools", "run", "shell", "--input", string(input), "--workspace", c.ws)
	if code != 0 || !strings.Contains(out, `blue\nCleo Config\ncleo@example.com\n`) {
		t.Fatalf("shell with config.json's settings: exit %d %s %s", code, out, stderr)
	}

	for _, bad := range []string{`{"shell":{"passEnv":["OPENAI_API_KEY"]}}`, `{"shell":{"env":{"JEAN2_TOKEN":"x"}}}`, `{"shell":{"timeout":"soon"}}`} {
		if err := os.WriteFile(filepath.Join(c.home, "config.json"), []byte(bad), 0o644); err != nil {
			t.Fatal(err)
		}
		_, stderr, code = c.run("", "tools", "run", "shell", "--input", string(input), "--workspace", c.ws)
		if code == 0 || !strings.Contains(stderr, "config.json: shell: ") {
			t.Fatalf("config %s: exit %d %s", bad, code, stderr)
		}
	}
}
