package policy

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
)

// maxDotEnvBytes bounds what ParseDotEnv reads: a .env file is a short list of settings, and
// a runaway file must not eat the server's memory.
const maxDotEnvBytes = 16 << 20

// DotEnvError is a malformed line of a .env file. It carries the line number and what is
// wrong, never the line itself: the value may be a secret.
type DotEnvError struct {
	Line   int
	Reason string
}

func (e *DotEnvError) Error() string { return fmt.Sprintf(".env line %d: %s", e.Line, e.Reason) }

// ParseDotEnv reads KEY=VALUE settings ($JEAN2_HOME/.env). It accepts blank lines, "#"
// comments, an optional "export " prefix, spaces around "=", single-quoted values (taken
// literally), double-quoted values (with \n, \r, \t, \" and \\ escapes) and unquoted values,
// where " #" (whitespace then "#") starts a comment; a "#" inside a word stays in the value,
// so passwords like abc#123 survive. A quoted value may span lines. A later setting of the
// same key wins. A malformed line is a *DotEnvError naming its line and never its content.
func ParseDotEnv(r io.Reader) (map[string]string, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxDotEnvBytes+1))
	if err != nil {
		return nil, fmt.Errorf("read .env: %w", err)
	}
	if len(data) > maxDotEnvBytes {
		return nil, fmt.Errorf("read .env: larger than %d bytes; a .env file holds a few settings", maxDotEnvBytes)
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	lines := strings.Split(text, "\n")

	vars := map[string]string{}
	for i := 0; i < len(lines); i++ {
		lineNo := i + 1
		line := strings.TrimSpace(lines[i])
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if rest, ok := cutExport(line); ok {
			line = rest
		}
		key, value, ok := strings.Cut(line, "=")
		if !ok {
			return nil, &DotEnvError{Line: lineNo, Reason: "expected KEY=VALUE (no \"=\" found)"}
		}
		key = strings.TrimSpace(key)
		if !validEnvName(key) {
			return nil, &DotEnvError{Line: lineNo, Reason: "invalid variable name: use letters, digits and _ and do not start with a digit"}
		}
		value = strings.TrimLeft(value, " \t")
		var parsed string
		switch {
		case strings.HasPrefix(value, `"`) || strings.HasPrefix(value, `'`):
			quote := value[0]
			body := value[1:]
			// A quoted value may continue on the following lines until its closing quote.
			end := closingQuote(body, quote)
			for end < 0 && i+1 < len(lines) {
				i++
				body += "\n" + lines[i]
				end = closingQuote(body, quote)
			}
			if end < 0 {
				return nil, &DotEnvError{Line: lineNo, Reason: fmt.Sprintf("unterminated %c-quoted value", quote)}
			}
			after := strings.TrimSpace(body[end+1:])
			if after != "" && !strings.HasPrefix(after, "#") {
				return nil, &DotEnvError{Line: lineNo, Reason: "unexpected text after the closing quote (put a comment after \" #\")"}
			}
			parsed = body[:end]
			if quote == '"' {
				parsed = unescapeDouble(parsed)
			}
		default:
			parsed = stripInlineComment(value)
		}
		vars[key] = parsed
	}
	return vars, nil
}

func cutExport(line string) (string, bool) {
	if !strings.HasPrefix(line, "export") || len(line) == len("export") {
		return "", false
	}
	if c := line[len("export")]; c != ' ' && c != '\t' {
		return "", false
	}
	return strings.TrimLeft(line[len("export"):], " \t"), true
}

// closingQuote finds the closing quote in body; in double quotes a backslash escapes the
// next character.
func closingQuote(body string, quote byte) int {
	for i := 0; i < len(body); i++ {
		switch {
		case quote == '"' && body[i] == '\\':
			i++
		case body[i] == quote:
			return i
		}
	}
	return -1
}

func unescapeDouble(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch s[i] {
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case '"', '\\':
			b.WriteByte(s[i])
		default:
			// Unknown escapes stay as written, so Windows paths and regexes keep their backslash.
			b.WriteByte('\\')
			b.WriteByte(s[i])
		}
	}
	return b.String()
}

func stripInlineComment(v string) string {
	for i := 0; i < len(v); i++ {
		if v[i] == '#' && i > 0 && (v[i-1] == ' ' || v[i-1] == '\t') {
			v = v[:i]
			break
		}
	}
	return strings.TrimSpace(v)
}

// validEnvName reports whether name is a portable environment variable name.
func validEnvName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		switch {
		case c == '_', 'A' <= c && c <= 'Z', 'a' <= c && c <= 'z':
		case '0' <= c && c <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// providerKeys are the host's own model-provider credentials. They are withheld from every
// tool, even one that declares them: the guide promises that API keys never reach a tool,
// and a tool that wants a model goes through ctx.llm.
var providerKeys = [...]string{
	"OPENAI_API_KEY", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID",
	"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN",
	"OPENROUTER_API_KEY",
	"GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GENERATIVE_AI_API_KEY", "GOOGLE_APPLICATION_CREDENTIALS",
	"AZURE_OPENAI_API_KEY", "AZURE_API_KEY",
	"MISTRAL_API_KEY", "GROQ_API_KEY", "DEEPSEEK_API_KEY", "XAI_API_KEY", "COHERE_API_KEY",
	"TOGETHER_API_KEY", "FIREWORKS_API_KEY", "PERPLEXITY_API_KEY", "CEREBRAS_API_KEY",
	"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_BEARER_TOKEN_BEDROCK",
}

// runtimeControl are variables that change how the worker runtime itself starts (preloaded
// code, loader paths). The host sets up the worker; a tool must not be able to reach in
// before it through a declared variable.
var runtimeControl = [...]string{"NODE_OPTIONS", "BUN_OPTIONS", "NODE_REPL_EXTERNAL_MODULE"}

// ReservedEnv reports whether name is withheld from tools even when a tool declares it:
// jean2's own settings (JEAN2_*), the host's model-provider keys (OPENAI_API_KEY,
// ANTHROPIC_API_KEY, OPENROUTER_API_KEY, …) and variables that control the runtime or the
// dynamic loader (NODE_OPTIONS, BUN_OPTIONS, LD_*, DYLD_*). A tool may declare keys of its own
// (MY_API_KEY); a tool list should show declared names for which this is true as withheld.
func ReservedEnv(name string) bool {
	upper := strings.ToUpper(name)
	if strings.HasPrefix(upper, "JEAN2_") || strings.HasPrefix(upper, "LD_") || strings.HasPrefix(upper, "DYLD_") {
		return true
	}
	for _, k := range providerKeys {
		if upper == k {
			return true
		}
	}
	for _, k := range runtimeControl {
		if upper == k {
			return true
		}
	}
	return false
}

// ProvidersFile is the provider configuration in $JEAN2_HOME (provider.FileName).
const ProvidersFile = "providers.json"

// apiKeyEnvField finds "apiKeyEnv": "NAME" in a providers.json that does not parse, so a
// broken file still has its key variables withheld.
var apiKeyEnvField = regexp.MustCompile(`"apiKeyEnv"\s*:\s*"([^"\\]*)"`)

// ProviderKeyNames returns the variables providers.json names as a provider's key
// (apiKeyEnv), sorted and without duplicates. A providers.json may name any variable
// (MY_PROVIDER_KEY), which ReservedEnv cannot know; every host withholds these too, whatever
// command made it (serve, tools run, tools list, mcp). The file is read leniently: a missing
// file names nothing; a malformed one still gives up every "apiKeyEnv": "NAME" written in
// it; only a file that cannot be read is an error, since its names cannot be known.
func ProviderKeyNames(home string) ([]string, error) {
	data, err := os.ReadFile(filepath.Join(home, ProvidersFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read %s to withhold its key variables from tools: %w", ProvidersFile, err)
	}
	seen := map[string]bool{}
	var f struct {
		Providers []struct {
			APIKeyEnv string `json:"apiKeyEnv"`
		} `json:"providers"`
	}
	if json.Unmarshal(data, &f) == nil {
		for _, p := range f.Providers {
			seen[p.APIKeyEnv] = true
		}
	}
	for _, m := range apiKeyEnvField.FindAllSubmatch(data, -1) {
		seen[string(m[1])] = true
	}
	delete(seen, "")
	out := make([]string, 0, len(seen))
	for name := range seen {
		out = append(out, name)
	}
	sort.Strings(out)
	return out, nil
}

// WithoutEnv returns env (KEY=VALUE entries) without the entries named in names.
func WithoutEnv(env []string, names []string) []string {
	if len(names) == 0 {
		return env
	}
	out := make([]string, 0, len(env))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !containsName(names, name) {
			out = append(out, kv)
		}
	}
	return out
}

func containsName(names []string, name string) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

// WithheldEnv returns, sorted and without duplicates, the declared names a tool will not
// receive because they are reserved (see ReservedEnv) or are not valid variable names.
func WithheldEnv(declared []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, name := range declared {
		if seen[name] || (validEnvName(name) && !ReservedEnv(name)) {
			continue
		}
		seen[name] = true
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// ToolEnv is what ctx.env holds for a tool: only the names it declared, each taken from the
// .env file first and then from the server's environment (KEY=VALUE entries, as
// os.Environ gives; a later entry wins, as in exec.Cmd). Reserved names (ReservedEnv) and
// invalid names never appear, nor does anything undeclared.
func ToolEnv(declared []string, dotenv map[string]string, serverEnv []string) map[string]string {
	out := make(map[string]string, len(declared))
	if len(declared) == 0 {
		return out
	}
	server := envMap(serverEnv)
	for _, name := range declared {
		if !validEnvName(name) || ReservedEnv(name) {
			continue
		}
		if v, ok := dotenv[name]; ok {
			out[name] = v
		} else if v, ok := server[name]; ok {
			out[name] = v
		}
	}
	return out
}

func envMap(env []string) map[string]string {
	m := make(map[string]string, len(env))
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k != "" {
			m[k] = v
		}
	}
	return m
}

// SystemPath is the fixed PATH a worker gets, after the runtime binary's directory. It never
// comes from the server's PATH, which may point into a user's private tool directories.
const SystemPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// BaseEnv is the clean base of a worker's environment.
type BaseEnv struct {
	RuntimeDir string // directory of the node or bun binary; first on PATH
	Home       string // HOME for the worker
	TempDir    string // TMPDIR for the worker
	TZ         string // the server's TZ, if it has one
}

// baseNames are the variables WorkerEnv sets from BaseEnv. A tool that declares one of them
// still sees the .env or server value through ctx.env, but its process environment keeps
// the base value, so PATH and HOME are the same for every worker.
var baseNames = [...]string{"PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "TZ"}

// WorkerEnv returns the exact environment (KEY=VALUE, sorted) for a worker process and
// everything it starts: PATH (the runtime's directory, then SystemPath), HOME, LANG and
// LC_ALL set to C.UTF-8, TMPDIR, TZ when the server has it, and the tool's declared
// variables (as ToolEnv gives them). Nothing else from the server passes. Reserved names,
// invalid names, values holding a NUL byte and tool variables named like a base variable are
// dropped. A RuntimeDir, Home or TempDir that is not an absolute path (or, for RuntimeDir,
// holds ":") is left out rather than trusted.
func WorkerEnv(base BaseEnv, toolVars map[string]string) []string {
	env := map[string]string{}
	path := SystemPath
	if usableDir(base.RuntimeDir) && !strings.Contains(base.RuntimeDir, ":") {
		path = filepath.Clean(base.RuntimeDir) + ":" + SystemPath
	}
	env["PATH"] = path
	env["LANG"] = "C.UTF-8"
	env["LC_ALL"] = "C.UTF-8"
	if usableDir(base.Home) {
		env["HOME"] = filepath.Clean(base.Home)
	}
	if usableDir(base.TempDir) {
		env["TMPDIR"] = filepath.Clean(base.TempDir)
	}
	if base.TZ != "" && !strings.ContainsRune(base.TZ, 0) {
		env["TZ"] = base.TZ
	}
	for k, v := range toolVars {
		if !validEnvName(k) || ReservedEnv(k) || isBaseName(k) || strings.ContainsRune(v, 0) {
			continue
		}
		env[k] = v
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

func usableDir(p string) bool {
	return p != "" && filepath.IsAbs(p) && !strings.ContainsRune(p, 0)
}

func isBaseName(name string) bool {
	for _, b := range baseNames {
		if name == b {
			return true
		}
	}
	return false
}
