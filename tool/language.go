package tool

import (
	"path/filepath"
	"strings"
)

// languages maps file extensions to language ids (ctx.fs.detectLanguage). Workers get the
// same table at start, so Go and JavaScript tools agree.
var languages = map[string]string{
	".ts": "typescript", ".tsx": "typescriptreact", ".mts": "typescript", ".cts": "typescript",
	".js": "javascript", ".jsx": "javascriptreact", ".mjs": "javascript", ".cjs": "javascript",
	".json": "json", ".jsonc": "jsonc", ".md": "markdown", ".mdx": "mdx",
	".go": "go", ".py": "python", ".rb": "ruby", ".rs": "rust", ".java": "java", ".kt": "kotlin",
	".swift": "swift", ".c": "c", ".h": "c", ".cc": "cpp", ".cpp": "cpp", ".hpp": "cpp",
	".cs": "csharp", ".php": "php", ".sh": "shellscript", ".bash": "shellscript", ".zsh": "shellscript",
	".fish": "fish", ".ps1": "powershell", ".sql": "sql", ".html": "html", ".htm": "html",
	".css": "css", ".scss": "scss", ".less": "less", ".vue": "vue", ".svelte": "svelte",
	".yaml": "yaml", ".yml": "yaml", ".toml": "toml", ".xml": "xml", ".svg": "xml",
	".lua": "lua", ".dart": "dart", ".scala": "scala", ".ex": "elixir", ".exs": "elixir",
	".erl": "erlang", ".hs": "haskell", ".ml": "ocaml", ".r": "r", ".jl": "julia", ".zig": "zig",
	".tf": "terraform", ".proto": "proto", ".graphql": "graphql", ".ini": "ini", ".txt": "text",
	".dockerfile": "dockerfile",
}

// DetectLanguage returns the language id of a path by its extension, or "text".
func DetectLanguage(path string) string {
	base := strings.ToLower(filepath.Base(path))
	switch base {
	case "dockerfile":
		return "dockerfile"
	case "makefile":
		return "makefile"
	}
	if l, ok := languages[strings.ToLower(filepath.Ext(path))]; ok {
		return l
	}
	return "text"
}

// Languages returns a copy of the extension → language table.
func Languages() map[string]string {
	m := make(map[string]string, len(languages))
	for k, v := range languages {
		m[k] = v
	}
	return m
}
