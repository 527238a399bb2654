package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os/exec"
	"sort"
	"strings"
	"time"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/mcpclient"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const mcpProbeUsage = `Usage:
  jean2 mcp probe [flags] URL

Connects to the MCP server at URL (streamable HTTP) the way jean2 connects to the servers of
mcp.json, lists its tools and calls each one with the arguments --args gives it, else
arguments made from its input schema (defaults, else the first enum value, else an empty
value of the type). Elicitation is answered with the requested schema's defaults. When the server asks jean2 to sign in
(OAuth), the authorization page is opened (--browser) or its address printed, and the
answer comes back to a listener on 127.0.0.1; the token is kept in $JEAN2_HOME/mcp-oauth.

  --browser CMD              command that opens the sign-in page (the URL is its last
                             argument; default: $BROWSER, else the address is printed)
  --client-id ID             a client registered beforehand with the authorization server
  --client-secret SECRET     its secret
  --grant client_credentials sign in as a machine, with no person: the client proves
                             itself with --client-secret or --private-key-file
  --private-key-file FILE    the client's PEM private key, to sign its JWT assertion
                             (private_key_jwt)
  --signing-algorithm ALG    the JWT's algorithm (default: the key's usual one, e.g. ES256)
  --client-metadata-url URL  jean2's client ID metadata document (https), when the
                             authorization server supports them
  --args NAME=JSON           the arguments to call tool NAME with (repeatable)
  --only NAME                call tool NAME only
  --schema NAME              print only tool NAME's input schema, as jean2 keeps it
  --no-call                  list the tools only
  --timeout DURATION         for the whole probe, sign-in included (default 2m)
`

const mcpLoginUsage = `Usage:
  jean2 mcp login NAME [--workspace DIR] [--browser CMD] [--again]
  jean2 mcp logout NAME [--workspace DIR]

Signs jean2 in to the HTTP MCP server NAME of $JEAN2_HOME/mcp.json (or DIR/.jean2/mcp.json,
once trusted) with OAuth: the authorization page opens in the browser (--browser CMD, else
$BROWSER, else the address is printed to open yourself) and its answer comes back to a
listener on 127.0.0.1. The token is kept in $JEAN2_HOME/mcp-oauth (mode 0600, out of every
tool's reach) and refreshed when it expires; jean2 serve and the other commands use it, and
a server waiting in state "needs sign-in" connects at its next attempt. logout forgets it.

  --workspace DIR  the workspace whose .jean2/mcp.json is read too (default: the current folder)
  --browser CMD    the command that opens the sign-in page
  --again          sign in even when a kept token still works
`

// browserOpener opens url with cmd (its words, then the URL), or $BROWSER; with neither it
// only prints the address. The address is always printed, for a browser on another machine.
func browserOpener(e env, cmd string) func(context.Context, string) error {
	if cmd == "" {
		cmd = e.getenv("BROWSER")
	}
	return func(ctx context.Context, url string) error {
		fmt.Fprintf(e.stderr, "jean2: sign in at:\n  %s\n", url)
		if cmd == "" {
			return nil
		}
		words := strings.Fields(cmd)
		c := exec.CommandContext(ctx, words[0], append(words[1:], url)...)
		c.Stdout, c.Stderr = nil, nil
		if err := c.Start(); err != nil {
			return fmt.Errorf("start %s: %w (open the address above yourself)", words[0], err)
		}
		go func() { _ = c.Wait() }()
		return nil
	}
}

// mcpProbe runs `jean2 mcp probe URL`.
func mcpProbe(ctx context.Context, e env, args []string) error {
	fs := newFlags("mcp probe", e)
	browser := fs.String("browser", "", "command that opens the sign-in page")
	clientID := fs.String("client-id", "", "pre-registered client ID")
	clientSecret := fs.String("client-secret", "", "pre-registered client secret")
	metadataURL := fs.String("client-metadata-url", "", "client ID metadata document URL")
	grant := fs.String("grant", "", "client_credentials: sign in with no person")
	keyFile := fs.String("private-key-file", "", "the client's PEM private key (private_key_jwt)")
	alg := fs.String("signing-algorithm", "", "the client assertion's algorithm")
	noCall := fs.Bool("no-call", false, "list the tools only")
	only := fs.String("only", "", "call this tool only")
	schemaOf := fs.String("schema", "", "print this tool's input schema")
	given := map[string]map[string]any{}
	fs.Func("args", "NAME=JSON: the arguments of tool NAME", func(v string) error {
		name, js, ok := strings.Cut(v, "=")
		var args map[string]any
		if !ok || json.Unmarshal([]byte(js), &args) != nil {
			return fmt.Errorf("--args %q: want NAME={json object}", v)
		}
		given[name] = args
		return nil
	})
	timeout := fs.Duration("timeout", 2*time.Minute, "for the whole probe")
	pos, help, err := parseMixed(fs, e, args, mcpProbeUsage)
	if help || err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("give one URL\n\n%s", mcpProbeUsage)
	}
	cfg := mcpclient.ServerConfig{Name: "probe", URL: pos[0], File: "(jean2 mcp probe)"}
	if *clientID != "" || *metadataURL != "" || *grant != "" {
		cfg.OAuth = &mcpclient.OAuthConfig{ClientID: *clientID, ClientSecret: *clientSecret, ClientMetadataURL: *metadataURL,
			Grant: *grant, PrivateKeyFile: *keyFile, SigningAlgorithm: *alg}
	}
	if err := cfg.Check(); err != nil {
		return usagef("%v", err)
	}
	layout, err := host.LayoutFromEnv(e.getenv)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	store := mcpclient.NewTokenStore(layout.Home)
	cs, closeFn, err := mcpclient.Connect(ctx, cfg, mcpclient.Options{
		Getenv: e.getenv, Version: version, Logger: cliLogger(e), Tokens: store,
		SignIn: &mcpclient.SignIn{Store: store, Open: browserOpener(e, *browser), Getenv: e.getenv},
		Elicit: func(_ context.Context, _ string, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return elicitDefaults(e, req), nil
		},
	})
	if err != nil {
		return fmt.Errorf("mcp probe %s: %w", cfg.URL, err)
	}
	defer closeFn()
	if *schemaOf == "" {
		printServer(e, cs.InitializeResult())
	}
	var tools []*mcp.Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return fmt.Errorf("mcp probe %s: list tools: %w", cfg.URL, err)
		}
		tools = append(tools, t)
	}
	if *schemaOf != "" {
		return printSchema(e, tools, *schemaOf)
	}
	failed := probeTools(ctx, e, cs, tools, given, *noCall, *only)
	if failed > 0 {
		return fmt.Errorf("mcp probe %s: %d of %d calls failed", cfg.URL, failed, len(tools))
	}
	return nil
}

// probeTools lists the tools and calls each (but with noCall, or only the one named only)
// with the given arguments or ones made from its schema; it returns how many calls failed.
func probeTools(ctx context.Context, e env, cs *mcp.ClientSession, tools []*mcp.Tool, given map[string]map[string]any, noCall bool, only string) int {
	fmt.Fprintf(e.stdout, "tools: %d\n", len(tools))
	failed := 0
	for _, t := range tools {
		fmt.Fprintf(e.stdout, "- %s: %s\n", t.Name, firstLine(strings.TrimSpace(t.Description)))
		if noCall || (only != "" && t.Name != only) {
			continue
		}
		args, ok := given[t.Name]
		if !ok {
			args = argsFromSchema(t.InputSchema)
		}
		if !probeCall(ctx, e, cs, t.Name, args) {
			failed++
		}
	}
	return failed
}

// printServer says which server answered. A server on 2026-07-28 may leave its name out of
// server/discover, and one on any revision may send no capabilities.
func printServer(e env, init *mcp.InitializeResult) {
	fmt.Fprintf(e.stdout, "connected: %s (protocol %s)\n", serverName(init), init.ProtocolVersion)
}

func serverName(init *mcp.InitializeResult) string {
	if init.ServerInfo == nil {
		return "(a server that gave no name)"
	}
	return init.ServerInfo.Name + " " + init.ServerInfo.Version
}

// printSchema prints the input schema of tool name as jean2 keeps it for the model and its
// own clients (mcpclient.InputSchema): as the server wrote it, keyword for keyword.
func printSchema(e env, tools []*mcp.Tool, name string) error {
	for _, t := range tools {
		if t.Name == name {
			fmt.Fprintf(e.stdout, "%s\n", mcpclient.InputSchema(t))
			return nil
		}
	}
	return fmt.Errorf("mcp probe: the server lists no tool %q", name)
}

// probeCall calls one tool and prints what came back; false when the call itself failed.
func probeCall(ctx context.Context, e env, cs *mcp.ClientSession, name string, args map[string]any) bool {
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
	a, _ := json.Marshal(args)
	switch {
	case err != nil:
		fmt.Fprintf(e.stdout, "  call %s: error: %v\n", a, err)
		return false
	case res.IsError:
		fmt.Fprintf(e.stdout, "  call %s: tool error: %s\n", a, contentText(res.Content))
	default:
		fmt.Fprintf(e.stdout, "  call %s: %s\n", a, contentText(res.Content))
	}
	return true
}

// contentText is a result's text content, other content described; cut at 300 characters.
func contentText(cs []mcp.Content) string {
	var parts []string
	for _, c := range cs {
		switch c := c.(type) {
		case *mcp.TextContent:
			parts = append(parts, c.Text)
		case *mcp.ImageContent:
			parts = append(parts, fmt.Sprintf("[image %s, %d bytes]", c.MIMEType, len(c.Data)))
		default:
			parts = append(parts, fmt.Sprintf("[%T]", c))
		}
	}
	s := strings.Join(parts, " ")
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}

// argsFromSchema makes arguments for a call from an input schema: each property's default,
// else its first enum value or const, else — for a required property — an empty value of
// its type.
func argsFromSchema(schema any) map[string]any {
	var s struct {
		Properties map[string]map[string]any `json:"properties"`
		Required   []string                  `json:"required"`
	}
	raw, _ := json.Marshal(schema)
	_ = json.Unmarshal(raw, &s)
	args := map[string]any{}
	names := make([]string, 0, len(s.Properties))
	for n := range s.Properties {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		p := s.Properties[n]
		if v, ok := p["default"]; ok {
			args[n] = v
			continue
		}
		if v, ok := p["const"]; ok {
			args[n] = v
			continue
		}
		if en, ok := p["enum"].([]any); ok && len(en) > 0 {
			args[n] = en[0]
			continue
		}
		required := false
		for _, r := range s.Required {
			required = required || r == n
		}
		if !required {
			continue
		}
		switch p["type"] {
		case "number", "integer":
			args[n] = 1
		case "boolean":
			args[n] = false
		case "array":
			args[n] = []any{}
		case "object":
			args[n] = map[string]any{}
		default:
			args[n] = ""
		}
	}
	return args
}

// elicitDefaults answers a form elicitation with the requested schema's defaults (SEP-1034);
// a URL elicitation is shown and declined (a probe opens no pages but the sign-in's).
func elicitDefaults(e env, req *mcp.ElicitRequest) *mcp.ElicitResult {
	p := req.Params
	if p.Mode == "url" {
		fmt.Fprintf(e.stderr, "jean2: the server asks you to open %s (%s); a probe declines\n", p.URL, p.Message)
		return &mcp.ElicitResult{Action: "decline"}
	}
	content := map[string]any{}
	var s struct {
		Properties map[string]map[string]any `json:"properties"`
	}
	raw, _ := json.Marshal(p.RequestedSchema)
	_ = json.Unmarshal(raw, &s)
	for n, prop := range s.Properties {
		if v, ok := prop["default"]; ok {
			content[n] = v
		}
	}
	fmt.Fprintf(e.stderr, "jean2: elicitation %q answered with the defaults %v\n", p.Message, content)
	return &mcp.ElicitResult{Action: "accept", Content: content}
}

// mcpLogin runs `jean2 mcp login NAME` and `jean2 mcp logout NAME`.
func mcpLogin(ctx context.Context, e env, args []string, logout bool) error {
	name := "mcp login"
	if logout {
		name = "mcp logout"
	}
	fs := newFlags(name, e)
	workspace := fs.String("workspace", "", "the workspace folder")
	browser := fs.String("browser", "", "command that opens the sign-in page")
	again := fs.Bool("again", false, "sign in even when a kept token works")
	pos, help, err := parseMixed(fs, e, args, mcpLoginUsage)
	if help || err != nil {
		return err
	}
	if len(pos) != 1 {
		return usagef("give the name of one server of mcp.json\n\n%s", mcpLoginUsage)
	}
	layout, err := host.LayoutFromEnv(e.getenv)
	if err != nil {
		return err
	}
	ws := *workspace
	if ws == "" {
		ws = workingDir()
	}
	all, loadErr := mcpConfig(e, layout, ws)
	var cfg *mcpclient.ServerConfig
	var names []string
	for i, s := range all.Servers {
		if s.Type != "stdio" {
			names = append(names, s.Name)
		}
		if s.Name == pos[0] {
			cfg = &all.Servers[i]
		}
	}
	if cfg == nil {
		if loadErr != nil {
			return fmt.Errorf("no MCP server %q (%v)", pos[0], loadErr)
		}
		return fmt.Errorf("no MCP server %q in mcp.json; the HTTP servers are: %s", pos[0], strings.Join(names, ", "))
	}
	if cfg.Type == "stdio" {
		return fmt.Errorf("MCP server %s is started as a command (stdio): there is nothing to sign in to", cfg.Name)
	}
	store := mcpclient.NewTokenStore(layout.Home)
	if logout || *again {
		if err := store.Forget(cfg.URL); err != nil {
			return err
		}
		if logout {
			fmt.Fprintf(e.stdout, "Signed out of %s (%s): its token is forgotten.\n", cfg.Name, cfg.URL)
			return nil
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Minute)
	defer cancel()
	cs, closeFn, err := mcpclient.Connect(ctx, *cfg, mcpclient.Options{
		Getenv: e.getenv, Version: version, Logger: cliLogger(e), Tokens: store,
		SignIn: &mcpclient.SignIn{Store: store, Open: browserOpener(e, *browser), Getenv: e.getenv},
	})
	if err != nil {
		return fmt.Errorf("sign in to %s: %w", cfg.Name, err)
	}
	defer closeFn()
	if !store.HasToken(cfg.URL) {
		fmt.Fprintf(e.stdout, "%s (%s) connected without asking jean2 to sign in.\n", cfg.Name, cfg.URL)
		return nil
	}
	fmt.Fprintf(e.stdout, "Signed in to %s (%s, %s); the token is kept in %s.\n", cfg.Name, cfg.URL, serverName(cs.InitializeResult()), store.Dir)
	return nil
}

// parseMixed parses flags that may come before or after positional arguments; help is true
// when --help was asked for (the usage is printed).
func parseMixed(fs *flag.FlagSet, e env, args []string, usage string) (pos []string, help bool, err error) {
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprint(e.stdout, usage)
				return nil, true, nil
			}
			return nil, false, usagef("%v\n\n%s", err, usage)
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, false, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}
