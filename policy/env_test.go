package policy

import (
	"errors"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestParseDotEnv(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want map[string]string
	}{
		{"plain", "A=1\nB=two words\n", map[string]string{"A": "1", "B": "two words"}},
		{"export prefix", "export A=1\nexport\tB=2\n", map[string]string{"A": "1", "B": "2"}},
		{"export as a name", "export=1\nexporter=2\n", map[string]string{"export": "1", "exporter": "2"}},
		{"comments and blanks", "# top\n\n   \nA=1\n  # indented\n", map[string]string{"A": "1"}},
		{"spaces around =", "  A =  spaced value  \n", map[string]string{"A": "spaced value"}},
		{"empty value", "A=\nB=''\nC=\"\"\n", map[string]string{"A": "", "B": "", "C": ""}},
		{"inline comment", "A=value # a comment\nB=value\t#tab comment\n", map[string]string{"A": "value", "B": "value"}},
		{"hash inside a word stays", "PASS=abc#123\nURL=http://x/#frag\n", map[string]string{"PASS": "abc#123", "URL": "http://x/#frag"}},
		{"single quotes are literal", `A='a \n b # not a comment'`, map[string]string{"A": `a \n b # not a comment`}},
		{"double quote escapes", `A="line1\nline2\ttab \"q\" back\\slash \d"`, map[string]string{"A": "line1\nline2\ttab \"q\" back\\slash \\d"}},
		{"quoted then comment", `A="x y" # note` + "\nB='z' #c", map[string]string{"A": "x y", "B": "z"}},
		{"equals in value", "A=k=v=w\n", map[string]string{"A": "k=v=w"}},
		{"crlf", "A=1\r\nB=\"2\"\r\n", map[string]string{"A": "1", "B": "2"}},
		{"bom", "\xef\xbb\xbfA=1\n", map[string]string{"A": "1"}},
		{"multiline double", "A=\"first\nsecond\"\nB=3\n", map[string]string{"A": "first\nsecond", "B": "3"}},
		{"multiline single", "KEY='-----BEGIN-----\nabc\n-----END-----'\n", map[string]string{"KEY": "-----BEGIN-----\nabc\n-----END-----"}},
		{"last wins", "A=1\nA=2\n", map[string]string{"A": "2"}},
		{"no trailing newline", "A=1", map[string]string{"A": "1"}},
		{"underscore and digits", "_A1=x\nMY_TOOL_2=y\n", map[string]string{"_A1": "x", "MY_TOOL_2": "y"}},
		{"empty input", "", map[string]string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseDotEnv(strings.NewReader(tt.in))
			if err != nil {
				t.Fatalf("ParseDotEnv: %v", err)
			}
			if !maps.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestParseDotEnvMalformed(t *testing.T) {
	const secret = "sk-live-SECRET"
	tests := []struct {
		name string
		in   string
		line int
	}{
		{"no equals", "A=1\n" + secret + "\n", 2},
		{"invalid name", "# c\n\n9X=" + secret + "\n", 3},
		{"name with dash", "MY-KEY=" + secret, 1},
		{"name with space", "MY KEY=" + secret, 1},
		{"empty name", "=" + secret, 1},
		{"unterminated double", "A=1\nB=\"" + secret + "\nC=2\n", 2},
		{"unterminated single", "A='" + secret, 1},
		{"text after quote", "A=\"" + secret + "\"junk", 1},
		{"export alone", "export " + secret, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseDotEnv(strings.NewReader(tt.in))
			var de *DotEnvError
			if !errors.As(err, &de) {
				t.Fatalf("want a *DotEnvError, got %v", err)
			}
			if de.Line != tt.line {
				t.Errorf("line = %d, want %d (%v)", de.Line, tt.line, err)
			}
			if strings.Contains(err.Error(), "SECRET") {
				t.Errorf("error echoes the value: %v", err)
			}
		})
	}
}

func TestReservedEnv(t *testing.T) {
	for _, name := range []string{
		"OPENAI_API_KEY", "ANTHROPIC_API_KEY", "OPENROUTER_API_KEY", "JEAN2_HOME", "JEAN2_TOOLS_PATH",
		"jean2_token", "openai_api_key", "GEMINI_API_KEY", "AWS_SECRET_ACCESS_KEY", "NODE_OPTIONS",
		"BUN_OPTIONS", "LD_PRELOAD", "LD_LIBRARY_PATH", "DYLD_INSERT_LIBRARIES",
	} {
		if !ReservedEnv(name) {
			t.Errorf("ReservedEnv(%q) = false, want true", name)
		}
	}
	for _, name := range []string{"MY_API_KEY", "MY_TOOL_CACHE_DIR", "GITHUB_TOKEN", "OPENAI_API_KEY_2", "PATH", "HOME", "JEAN"} {
		if ReservedEnv(name) {
			t.Errorf("ReservedEnv(%q) = true, want false", name)
		}
	}
	got := WithheldEnv([]string{"MY_API_KEY", "OPENAI_API_KEY", "bad-name", "JEAN2_X", "OPENAI_API_KEY"})
	if want := []string{"JEAN2_X", "OPENAI_API_KEY", "bad-name"}; !slices.Equal(got, want) {
		t.Errorf("WithheldEnv = %q, want %q", got, want)
	}
}

func TestToolEnv(t *testing.T) {
	dotenv := map[string]string{
		"MY_TOOL_CACHE_DIR": "/data/cache",
		"SHARED":            "from-dotenv",
		"OPENAI_API_KEY":    "sk-dotenv",
		"OTHER_TOOL_KEY":    "not-yours",
	}
	server := []string{
		"SHARED=from-server",
		"MY_TOOL_TIMEOUT=30",
		"ANTHROPIC_API_KEY=sk-ant",
		"OPENROUTER_API_KEY=sk-or",
		"JEAN2_SECRET=s",
		"UNDECLARED=u",
		"DUP=first", "DUP=second",
		"malformed-entry",
		"=novalue",
	}
	declared := []string{"MY_TOOL_CACHE_DIR", "MY_TOOL_TIMEOUT", "SHARED", "OPENAI_API_KEY", "ANTHROPIC_API_KEY", "JEAN2_SECRET", "NOT_SET", "DUP", "bad=name", ""}
	got := ToolEnv(declared, dotenv, server)
	want := map[string]string{
		"MY_TOOL_CACHE_DIR": "/data/cache",
		"MY_TOOL_TIMEOUT":   "30",
		"SHARED":            "from-dotenv",
		"DUP":               "second",
	}
	if !maps.Equal(got, want) {
		t.Errorf("ToolEnv = %q, want %q", got, want)
	}
	if len(ToolEnv(nil, dotenv, server)) != 0 {
		t.Error("a tool that declares nothing must see nothing")
	}
}

func TestWorkerEnv(t *testing.T) {
	base := BaseEnv{RuntimeDir: "/opt/node/bin", Home: "/home/jean2", TempDir: "/tmp/jean2-s1", TZ: "Europe/Paris"}
	toolVars := map[string]string{
		"MY_API_KEY":     "mine",
		"OPENAI_API_KEY": "sk-leak",
		"JEAN2_HOME":     "/x",
		"NODE_OPTIONS":   "--require /evil.js",
		"LD_PRELOAD":     "/evil.so",
		"PATH":           "/evil/bin",
		"HOME":           "/evil",
		"bad=name":       "x",
		"NUL_VALUE":      "a\x00b",
	}
	got := WorkerEnv(base, toolVars)
	want := []string{
		"HOME=/home/jean2",
		"LANG=C.UTF-8",
		"LC_ALL=C.UTF-8",
		"MY_API_KEY=mine",
		"PATH=/opt/node/bin:" + SystemPath,
		"TMPDIR=/tmp/jean2-s1",
		"TZ=Europe/Paris",
	}
	if !slices.Equal(got, want) {
		t.Errorf("WorkerEnv =\n%q\nwant\n%q", got, want)
	}

	// No TZ on the server, unusable directories: left out, never guessed.
	got = WorkerEnv(BaseEnv{RuntimeDir: "relative/bin", Home: "", TempDir: "tmp"}, nil)
	want = []string{"LANG=C.UTF-8", "LC_ALL=C.UTF-8", "PATH=" + SystemPath}
	if !slices.Equal(got, want) {
		t.Errorf("WorkerEnv = %q, want %q", got, want)
	}
	if got := WorkerEnv(BaseEnv{RuntimeDir: "/a:/b"}, nil); !slices.Contains(got, "PATH="+SystemPath) {
		t.Errorf("a runtime dir holding ':' must not be put on PATH: %q", got)
	}
}

// TestWorkerEnvRealProcess starts a real process with the worker environment and checks it
// sees exactly that, with the server's secrets nowhere.
func TestWorkerEnvRealProcess(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-server-secret")
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-server-secret")
	t.Setenv("SERVER_ONLY", "x")
	envBin, err := exec.LookPath("env")
	if err != nil {
		t.Skip("no env binary")
	}
	toolVars := ToolEnv([]string{"MY_TOOL_DIR", "OPENAI_API_KEY"}, map[string]string{"MY_TOOL_DIR": "/d"}, nil)
	want := WorkerEnv(BaseEnv{Home: t.TempDir(), TempDir: t.TempDir()}, toolVars)
	cmd := exec.Command(envBin)
	cmd.Env = want
	out, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSpace(string(out)), "\n")
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("process saw\n%q\nwant\n%q", got, want)
	}
	if strings.Contains(string(out), "secret") || strings.Contains(string(out), "SERVER_ONLY") {
		t.Errorf("server environment leaked: %s", out)
	}
}

// ProviderKeyNames finds every apiKeyEnv of providers.json, in a well-formed file and in
// one that does not parse (its names must be withheld all the same).
func TestProviderKeyNames(t *testing.T) {
	home := t.TempDir()
	if names, err := ProviderKeyNames(home); err != nil || names != nil {
		t.Fatalf("no file: %v %v", names, err)
	}
	write := func(s string) {
		if err := os.WriteFile(filepath.Join(home, ProvidersFile), []byte(s), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(`{"providers":[{"name":"a","apiKeyEnv":"MY_KEY"},{"name":"b","apiKeyEnv":"OTHER_KEY"},{"name":"c","apiKey":"x"},{"name":"d","apiKeyEnv":"MY_KEY"}]}`)
	if names, err := ProviderKeyNames(home); err != nil || strings.Join(names, ",") != "MY_KEY,OTHER_KEY" {
		t.Fatalf("well-formed: %v %v", names, err)
	}
	write(`{"providers":[{"name":"a", "apiKeyEnv" : "BROKEN_FILE_KEY"}, oops`)
	if names, err := ProviderKeyNames(home); err != nil || strings.Join(names, ",") != "BROKEN_FILE_KEY" {
		t.Fatalf("malformed: %v %v", names, err)
	}
	if got := WithoutEnv([]string{"A=1", "MY_KEY=s", "B=2"}, []string{"MY_KEY"}); strings.Join(got, " ") != "A=1 B=2" {
		t.Fatalf("WithoutEnv: %v", got)
	}
}
