package host_test

import (
	"encoding/json"
	"strings"
	"testing"
)

// catalogueSDKTool imports, by name, every runtime export and type that jean2's public tool
// catalogue (tools/ of jean2ai/jean2) imports from '@jean2/sdk', the way those tools do, and
// calls each runtime export once. The list was taken from the catalogue's import lines and
// checked against the catalogue SDK's own export list (packages/sdk/src/shared-types).
const catalogueSDKTool = `
import type { ToolDefinition, ToolContext, ToolResult, AskFormResponse } from '@jean2/sdk';
import type {
  FileListVisualization, DiffHunk, DiffChange, DiffVisualization, DiffsVisualization, NoneVisualization,
  ShellOutputVisualization, MarkdownVisualization, TodoListVisualization, TodoListItem, CodeVisualization,
  PermissionIntent, ParsedShellSegment, ClientCapability, GrantScope, PermissionRiskLevel,
} from '@jean2/sdk';
import {
  SHELL_DANGEROUS_COMMANDS,
  SHELL_FILESYSTEM_COMMANDS,
  SHELL_SHELL_OPERATORS,
  createShellPermissionAskStructured,
  createOutsideWorkspaceAsk,
  createWorkspaceModificationAsk,
  getEffectiveShellCommandIdentity,
  splitShellCommandSegments,
  analyzeShellCommandEffects,
  getAllowedScopesForIntent,
  createWebfetchPermissionAsk,
  createFilePermissionAsk,
  SENSITIVE_FILE_PATTERNS,
  WELL_KNOWN_CLIENT_CAPABILITIES,
  type ShellRiskCategory,
} from '@jean2/sdk';

export const definition: ToolDefinition = {
  name: 'sdk-exports',
  description: 'calls every @jean2/sdk export the catalogue uses',
  inputSchema: { type: 'object', properties: {} },
};

export async function execute(_input: unknown, _ctx: ToolContext): Promise<ToolResult> {
  const category: ShellRiskCategory = 'destructive';
  const item: TodoListItem = { content: 'x', status: 'pending', priority: 'low' };
  const segs: ParsedShellSegment[] = splitShellCommandSegments('cd /w && /usr/bin/git push origin -f | tee log');
  const intents: PermissionIntent[] = analyzeShellCommandEffects({
    command: 'rm -rf build', baseCommand: 'rm', resolvedPaths: ['/w/build'],
    hasOperators: false, workspaceBound: true, riskCategory: category,
  });
  const scopes: GrantScope[] = getAllowedScopesForIntent(intents[0]);
  const cap: ClientCapability = WELL_KNOWN_CLIENT_CAPABILITIES[0];
  const risk: PermissionRiskLevel = 'high';
  return {
    success: true,
    result: {
      lists: {
        dangerous: SHELL_DANGEROUS_COMMANDS.includes('rm') && SHELL_DANGEROUS_COMMANDS.includes('curl'),
        filesystem: SHELL_FILESYSTEM_COMMANDS.includes('git push'),
        operators: ['&&', '||', '|', '>', '>>', '` + "`" + `', '$(', ';'].every((o) => SHELL_SHELL_OPERATORS.includes(o)),
        sensitive: SENSITIVE_FILE_PATTERNS.includes('.env'),
        capabilities: WELL_KNOWN_CLIENT_CAPABILITIES.length,
        cap,
      },
      segments: segs.map((s) => [s.baseCommand, s.args.length, s.flags.join(',')]),
      identities: [
        getEffectiveShellCommandIdentity('ls -la && rm -rf build'),
        getEffectiveShellCommandIdentity('git push origin main'),
        getEffectiveShellCommandIdentity('npm --silent test'),
        getEffectiveShellCommandIdentity('echo hi; sudo reboot'),
        getEffectiveShellCommandIdentity(''),
      ],
      intents,
      scopes,
      structured: createShellPermissionAskStructured({
        command: 'curl https://api.example.com/v1/users', baseCommand: 'curl', flags: [], risk,
        riskCategory: 'network', reason: 'network access', workspaceBound: true, hasOperators: false,
      }),
      chained: createShellPermissionAskStructured({
        command: 'make && make install', baseCommand: 'make', flags: [], risk: 'medium',
        riskCategory: 'side-effect', reason: 'chain', workspaceBound: true, hasOperators: true,
      }),
      outside: createOutsideWorkspaceAsk({ command: 'cat notes.txt', cwd: '/srv/docs', resolvedPaths: ['/srv/docs/notes.txt'] }),
      modification: createWorkspaceModificationAsk({ command: 'mkdir -p out', baseCommand: 'mkdir', resolvedPaths: ['/w/out'] }),
      webfetch: createWebfetchPermissionAsk({ url: 'http://example.com/a', host: 'example.com', risk: 'low', isHttp: true }),
      file: createFilePermissionAsk({ path: '/w/src/a.ts', operation: 'edit', risk: 'medium', reason: 'Edits it.' }),
      item,
    },
  };
}
`

// TestCatalogueSDKExports: a tool written as jean2's catalogue tools are (named imports of
// every helper and type they use from '@jean2/sdk') loads through the bundler and runs in a
// real worker, and each helper gives what the catalogue's tools rely on.
func TestCatalogueSDKExports(t *testing.T) {
	f := newFixture(t)
	f.addTool("sdk-exports", map[string]string{"tool.ts": catalogueSDKTool})
	f.start()
	out := f.call("sdk-exports", `{}`)
	got := result[map[string]json.RawMessage](t, out)
	text := func(k string) string { return string(got[k]) }
	var lists struct {
		Dangerous, Filesystem, Operators, Sensitive bool
		Capabilities                                int
		Cap                                         string
	}
	if err := json.Unmarshal(got["lists"], &lists); err != nil {
		t.Fatal(err)
	}
	if !lists.Dangerous || !lists.Filesystem || !lists.Operators || !lists.Sensitive || lists.Capabilities != 13 || lists.Cap != "chat_ui" {
		t.Errorf("lists: %+v", lists)
	}
	for k, want := range map[string]string{
		"segments":   `[["cd",1,""],["git",3,"-f"],["tee",1,""]]`,
		"identities": `["rm","git push","npm test","sudo",""]`,
		"intents":    `[{"resource":"file","action":"delete","targets":[{"target":"/w/build/","matcher":"prefix"}],"persistable":true,"allowedScopes":["once","session"]}]`,
		"scopes":     `["once","session"]`,
		"item":       `{"content":"x","status":"pending","priority":"low"}`,
	} {
		if text(k) != want {
			t.Errorf("%s = %s, want %s", k, text(k), want)
		}
	}
	type ask struct {
		Question      string            `json:"question"`
		Resource      string            `json:"resource"`
		Action        string            `json:"action"`
		Patterns      []string          `json:"patterns"`
		Duration      string            `json:"duration"`
		Paths         []string          `json:"paths"`
		AllowedScopes []string          `json:"allowedScopes"`
		Scope         map[string]string `json:"scope"`
		Metadata      map[string]any    `json:"metadata"`
	}
	asks := map[string]ask{}
	for _, k := range []string{"structured", "chained", "outside", "modification", "webfetch", "file"} {
		var a ask
		if err := json.Unmarshal(got[k], &a); err != nil {
			t.Fatalf("%s: %v", k, err)
		}
		asks[k] = a
	}
	check := func(name string, ok bool, a ask) {
		t.Helper()
		if !ok {
			t.Errorf("%s ask: %+v", name, a)
		}
	}
	a := asks["structured"]
	check("structured", a.Resource == "network" && a.Action == "request" && a.Duration == "session" &&
		strings.Join(a.Patterns, " ") == "api.example.com https://api.example.com/" &&
		a.Question == `Network request to "api.example.com" via curl https://api.example.com/v1/users. Requires approval.` &&
		a.Metadata["riskCategory"] == "network" && a.Metadata["baseCommand"] == "curl", a)
	a = asks["chained"]
	check("chained", a.Resource == "shell-command" && a.Duration == "session" && strings.Join(a.Patterns, " ") == "make" &&
		strings.Join(a.AllowedScopes, " ") == "once session" && a.Metadata["description"] == "Side-effect command • Contains shell operators", a)
	a = asks["outside"]
	check("outside", a.Resource == "file" && a.Action == "read" && a.Scope["type"] == "path" && a.Scope["label"] == "docs" &&
		strings.Join(a.Patterns, " ") == "/srv/docs/notes.txt" && a.Metadata["cwd"] == "/srv/docs" && a.Paths == nil, a)
	a = asks["modification"]
	check("modification", a.Resource == "file" && a.Action == "write" && a.Question == `Write to "out" via mkdir -p out. Requires approval.` &&
		strings.Join(a.Paths, " ") == "/w/out", a)
	a = asks["webfetch"]
	check("webfetch", a.Resource == "network" && a.Duration == "session" && a.Question == `Fetch URL "example.com" (unencrypted HTTP) requires approval.` &&
		strings.Join(a.Patterns, " ") == "example.com http://example.com/a" && a.Metadata["isHttp"] == true, a)
	a = asks["file"]
	check("file", a.Question == `Editing file "a.ts" requires approval. Edits it.` && a.Metadata["operation"] == "edit" &&
		a.Metadata["fileName"] == "a.ts" && a.Metadata["path"] == "/w/src/a.ts" && a.Metadata["isOutsideWorkspace"] == false &&
		a.Metadata["reason"] == "Edits it.", a)
}
