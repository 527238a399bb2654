// Package mcpclient connects jean2 to the MCP servers listed in mcp.json files and offers
// their tools to the host as tool sources: they are listed and called like any other tool,
// by the harness, `jean2 tools run` and jean2's own MCP server.
//
// The files have the common mcpServers shape:
//
//	{"mcpServers": {
//	  "files":  {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"], "env": {"DEBUG": "1"}},
//	  "remote": {"url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${REMOTE_TOKEN}"}}
//	}}
//
// A stdio server runs confined (host.MCPSandbox: its workspace and its own cache writable,
// nothing of $JEAN2_HOME, the network only through jean2's egress proxy to the hosts its
// "network" lists) unless $JEAN2_HOME/mcp.json says "sandbox": false for it. It gets an
// explicit environment: PATH, a HOME of its own (its cache; the user's when unconfined),
// then its "env", and JEAN2_MCP_NESTED=1; never the whole environment of jean2. "${NAME}"
// in env values and headers is replaced by the variable of jean2's environment, so secrets
// need not be written into the file (a workspace's file gets none of jean2's reserved ones).
package mcpclient

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/jean2/jean2/policy"
	"github.com/jean2/jean2/sandbox/egress"
)

// ServerConfig is one entry of mcpServers.
type ServerConfig struct {
	// Type is "stdio", "http" (streamable HTTP) or "sse"; empty means stdio when Command is
	// set and http when URL is.
	Type    string            `json:"type,omitempty"`
	Command string            `json:"command,omitempty"`
	Args    []string          `json:"args,omitempty"`
	Env     map[string]string `json:"env,omitempty"`
	Cwd     string            `json:"cwd,omitempty"`
	URL     string            `json:"url,omitempty"`
	Headers map[string]string `json:"headers,omitempty"`
	// OAuth says how jean2 identifies itself when an HTTP server asks it to sign in.
	OAuth *OAuthConfig `json:"oauth,omitempty"`
	// Timeout of one tool call in milliseconds (tool.DefaultTimeout when 0).
	Timeout int `json:"timeout,omitempty"`
	// Disabled servers are not started.
	Disabled bool `json:"disabled,omitempty"`
	// MaxMessageBytes caps one message jean2 reads from the server: a stdio line, an HTTP
	// response body, one SSE event (DefaultMaxMessageBytes when 0). A server that sends more
	// is disconnected and listed in error, so it cannot make jean2 hold unbounded memory.
	MaxMessageBytes int64 `json:"maxMessageBytes,omitempty"`
	// Network lists the hosts a stdio server may reach, as tools declare them ("api.github.com",
	// "*.example.com:443", "127.0.0.1:8080"; egress.Rule): its only way out is jean2's egress
	// proxy, which allows these and, for npx and uvx, their package registry (Reach). A
	// workspace's file is trusted with its list: the trust is the approval.
	Network []string `json:"network,omitempty"`
	// Sandbox false runs a stdio server of $JEAN2_HOME/mcp.json unconfined, as the user;
	// a workspace's file may not say so. Unset or true: confined (see host.MCPSandbox).
	Sandbox *bool `json:"sandbox,omitempty"`

	// Name is the key of the entry; File the mcp.json it came from.
	Name string `json:"-"`
	File string `json:"-"`
	// Workspace is the real path of the workspace whose .jean2/mcp.json lists the server
	// ("" for $JEAN2_HOME's): the folder a confined server may write, and the mark of a
	// file nobody but its workspace vouches for (its ${NAME} references are withheld
	// jean2's reserved variables).
	Workspace string `json:"-"`
	// HostUnconfined, when set, is why the host runs no server confined (its sandbox mode
	// is off): Abilities then says so, whatever the entry asks (WorkspaceFile.UnderSandbox).
	HostUnconfined string `json:"-"`
}

// Confined reports whether the server runs in the sandbox: every stdio server unless its
// entry in $JEAN2_HOME/mcp.json says "sandbox": false.
func (s ServerConfig) Confined() bool {
	stdio := s.Type == "stdio" || (s.Type == "" && s.Command != "")
	return stdio && (s.Sandbox == nil || *s.Sandbox || s.Workspace != "")
}

// Config is what one or more mcp.json files list.
type Config struct {
	Servers []ServerConfig
}

// FileError is an mcp.json that cannot be used; its servers are not started.
type FileError struct {
	File string
	Err  error
}

func (e *FileError) Error() string { return fmt.Sprintf("%s: %v", e.File, e.Err) }
func (e *FileError) Unwrap() error { return e.Err }

// Load reads the mcp.json files in order; a server named again in a later file replaces the
// earlier one (a workspace's file overrides $JEAN2_HOME's). A missing file is skipped. Every
// file that cannot be used is reported in the joined error (as *FileError), while the
// servers of the good files are still returned.
func Load(files ...string) (Config, error) {
	byName := map[string]ServerConfig{}
	var errs []error
	for _, f := range files {
		data, err := os.ReadFile(f)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, &FileError{File: f, Err: err})
			continue
		}
		servers, err := Parse(f, data)
		if err != nil {
			errs = append(errs, &FileError{File: f, Err: err})
			continue
		}
		for _, s := range servers {
			byName[s.Name] = s
		}
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	var cfg Config
	for _, n := range names {
		cfg.Servers = append(cfg.Servers, byName[n])
	}
	return cfg, errors.Join(errs...)
}

// Merge is base with the servers of over added; a server over names too replaces base's.
func Merge(base, over Config) Config {
	byName := map[string]ServerConfig{}
	for _, c := range []Config{base, over} {
		for _, s := range c.Servers {
			byName[s.Name] = s
		}
	}
	names := make([]string, 0, len(byName))
	for n := range byName {
		names = append(names, n)
	}
	sort.Strings(names)
	var out Config
	for _, n := range names {
		out.Servers = append(out.Servers, byName[n])
	}
	return out
}

// Parse reads one mcp.json. Each entry is checked, so a mistake is reported with the
// server's name and how to fix it.
func Parse(file string, data []byte) ([]ServerConfig, error) {
	var raw struct {
		Servers map[string]json.RawMessage `json:"mcpServers"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("not valid JSON: %w", err)
	}
	if raw.Servers == nil {
		return nil, fmt.Errorf(`no "mcpServers" object: write {"mcpServers": {"name": {"command": …}}}`)
	}
	names := make([]string, 0, len(raw.Servers))
	for n := range raw.Servers {
		names = append(names, n)
	}
	sort.Strings(names)
	var out []ServerConfig
	for _, name := range names {
		var s ServerConfig
		dec := json.NewDecoder(bytes.NewReader(raw.Servers[name]))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&s); err != nil {
			return nil, fmt.Errorf("mcpServers.%s: %w (the fields are command, args, env, cwd, network, sandbox, url, headers, oauth, type, timeout, maxMessageBytes, disabled)", name, err)
		}
		s.Name, s.File = name, file
		if err := s.check(); err != nil {
			return nil, fmt.Errorf("mcpServers.%s: %w", name, err)
		}
		if !s.Disabled {
			out = append(out, s)
		}
	}
	return out, nil
}

// Check checks an entry made elsewhere than in an mcp.json (jean2 mcp probe) as Parse
// checks the file's, filling in its Type.
func (s *ServerConfig) Check() error { return s.check() }

func (s *ServerConfig) check() error {
	if strings.TrimSpace(s.Name) == "" {
		return fmt.Errorf("the server has an empty name")
	}
	switch s.Type {
	case "":
		switch {
		case s.Command != "" && s.URL != "":
			return fmt.Errorf("give either command (a stdio server) or url (an HTTP server), not both")
		case s.Command != "":
			s.Type = "stdio"
		case s.URL != "":
			s.Type = "http"
		default:
			return fmt.Errorf("give command (a stdio server) or url (an HTTP server)")
		}
	case "stdio":
	case "http", "streamable-http", "streamableHttp":
		s.Type = "http"
	case "sse":
	default:
		return fmt.Errorf("type %q is not stdio, http or sse", s.Type)
	}
	if s.Type == "stdio" {
		if s.Command == "" {
			return fmt.Errorf("a stdio server needs a command")
		}
		if s.URL != "" || len(s.Headers) > 0 || s.OAuth != nil {
			return fmt.Errorf("a stdio server takes command, args, env, cwd and network, not url, headers or oauth")
		}
		if _, err := egress.ParseRules(s.Network); err != nil {
			return fmt.Errorf("network: %w", err)
		}
		for k := range s.Env {
			if !envName.MatchString(k) {
				return fmt.Errorf("env: %q is not an environment variable name", k)
			}
		}
	} else {
		if s.Command != "" || len(s.Args) > 0 || len(s.Env) > 0 || len(s.Network) > 0 || s.Sandbox != nil {
			return fmt.Errorf("an %s server takes url and headers, not command, args or env (nor network or sandbox: jean2 reaches it itself)", s.Type)
		}
		u, err := url.Parse(s.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("url %q is not an http(s) URL", s.URL)
		}
		if o := s.OAuth; o != nil {
			if err := o.check(); err != nil {
				return err
			}
		}
	}
	if s.MaxMessageBytes < 0 {
		return fmt.Errorf("maxMessageBytes %d: give a positive number of bytes (0 or none: %d)", s.MaxMessageBytes, DefaultMaxMessageBytes)
	}
	if s.Timeout < 0 {
		return fmt.Errorf("timeout %d: give a positive number of milliseconds", s.Timeout)
	}
	return nil
}

var (
	envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
	envRef  = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)
)

// expand replaces ${NAME} with the variable of getenv; an unset one becomes empty.
func expand(s string, getenv func(string) string) string {
	return envRef.ReplaceAllStringFunc(s, func(m string) string {
		return getenv(m[2 : len(m)-1])
	})
}

// NestedEnv is set in the environment of every stdio server jean2 starts.
const NestedEnv = "JEAN2_MCP_NESTED"

// commandEnv is the explicit environment of an unconfined stdio server: PATH and HOME of
// jean2's environment (so the command can be found and can find its own files), then
// declaredEnv. A confined one gets declaredEnv over the sandbox's own (host.MCPSandbox).
func (s ServerConfig) commandEnv(getenv func(string) string, withheld []string) []string {
	vars := map[string]string{}
	for _, k := range []string{"PATH", "HOME"} {
		if v := getenv(k); v != "" {
			vars[k] = v
		}
	}
	for _, kv := range s.declaredEnv(getenv, withheld) {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	return sortedEnv(vars)
}

// declaredEnv is the server's env with ${NAME} references expanded, and JEAN2_MCP_NESTED=1.
// A workspace's file gets nothing of jean2's reserved variables (provider keys, JEAN2_*)
// nor of withheld (the key variables providers.json names) through a reference: it comes
// with a folder nobody checked.
func (s ServerConfig) declaredEnv(getenv func(string) string, withheld []string) []string {
	if s.Workspace != "" {
		inner := getenv
		getenv = func(name string) string {
			if policy.ReservedEnv(name) || slices.Contains(withheld, name) {
				return ""
			}
			return inner(name)
		}
	}
	vars := map[string]string{}
	for k, v := range s.Env {
		vars[k] = expand(v, getenv)
	}
	// A jean2 started this way knows it is nested, and connects to no servers of its own:
	// a jean2 listed in its own mcp.json would otherwise start itself without end.
	vars[NestedEnv] = "1"
	return sortedEnv(vars)
}

func sortedEnv(vars map[string]string) []string {
	keys := make([]string, 0, len(vars))
	for k := range vars {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	env := make([]string, len(keys))
	for i, k := range keys {
		env[i] = k + "=" + vars[k]
	}
	return env
}

// confinedCwd is the folder a confined server of $JEAN2_HOME/mcp.json may write: its cwd,
// when its entry names one (absolute, or relative to the file's folder); "" for none.
func (s ServerConfig) confinedCwd() string {
	if s.Cwd == "" || s.Workspace != "" {
		return ""
	}
	if filepath.IsAbs(s.Cwd) {
		return filepath.Clean(s.Cwd)
	}
	return filepath.Join(filepath.Dir(s.File), s.Cwd)
}

// Registries a package runner fetches from, implied in its server's network: a server
// started with npx (or bunx) reaches the npm registry — npmjs.org, or the one its env
// names in npm_config_registry, since the user's ~/.npmrc is hidden from it —, one started
// with uvx reaches PyPI. Without them "npx -y pkg" could not fetch pkg; with them the
// server can fetch other packages from that registry too, which the trust prompt says.
const (
	npmRegistry  = "registry.npmjs.org:443"
	pypiIndex    = "pypi.org:443"
	pypiDownload = "files.pythonhosted.org:443"
)

// Implied is the network the server's command implies (its package registry), as egress
// entries; nil for other commands.
func (s ServerConfig) Implied() []string {
	switch filepath.Base(s.Command) {
	case "npx", "bunx":
		out := []string{npmRegistry}
		for _, k := range []string{"npm_config_registry", "NPM_CONFIG_REGISTRY"} {
			if u, err := url.Parse(s.Env[k]); err == nil && u.Hostname() != "" && (u.Scheme == "https" || u.Scheme == "http") {
				port := u.Port()
				if port == "" {
					port = map[string]string{"https": "443", "http": "80"}[u.Scheme]
				}
				if e := net.JoinHostPort(u.Hostname(), port); !slices.Contains(out, e) {
					out = append(out, e)
				}
			}
		}
		return out
	case "uvx":
		return []string{pypiIndex, pypiDownload}
	}
	return nil
}

// Reach is every host a confined server may reach: its network and what its command implies.
func (s ServerConfig) Reach() []string {
	out := slices.Clone(s.Network)
	for _, e := range s.Implied() {
		if !slices.Contains(out, e) {
			out = append(out, e)
		}
	}
	return out
}

// check checks an oauth object: a machine's (client credentials) or a person's sign-in.
func (o *OAuthConfig) check() error {
	switch o.Grant {
	case GrantClientCredentials:
		return o.checkMachine()
	case "", "authorization_code":
	default:
		return fmt.Errorf(`oauth: grant %q: give "client_credentials" for sign-in with no person, or leave it out`, o.Grant)
	}
	if o.PrivateKey != "" || o.PrivateKeyFile != "" {
		return fmt.Errorf(`oauth: a private key is for grant "client_credentials"`)
	}
	if o.ClientSecret != "" && o.ClientID == "" {
		return fmt.Errorf("oauth: a clientSecret needs its clientId")
	}
	if m := o.ClientMetadataURL; m != "" {
		if u, err := url.Parse(m); err != nil || u.Scheme != "https" || u.Path == "" || u.Path == "/" {
			return fmt.Errorf("oauth: clientMetadataUrl %q must be an https URL with a path (the client ID metadata document jean2 is known by)", m)
		}
	}
	return nil
}
