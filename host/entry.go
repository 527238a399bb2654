package host

import (
	"github.com/jean2/jean2/tool"
)

// Status of a listed tool.
const (
	StatusOK    = "ok"
	StatusError = "error"
	// StatusDisabled is a built-in turned off in the settings.
	StatusDisabled = "disabled"
	// StatusShadowed is a folder tool that has the name of a built-in which serves: a
	// working built-in is replaced only when a person turns it off (disabledBuiltins).
	StatusShadowed = "shadowed"
)

// Entry is one tool as the host lists it: what it is, which version serves, and what is
// wrong with it when something is.
type Entry struct {
	Name    string `json:"name"`
	Folder  string `json:"folder,omitempty"` // empty for tools compiled into the binary
	Version string `json:"version"`          // VERSION or package.json version, else the hash prefix
	Hash    string `json:"hash,omitempty"`   // content hash of the serving version
	Kind    string `json:"kind"`             // js, go, builtin
	Runtime string `json:"runtime"`          // node, bun, go, builtin
	Status  string `json:"status"`
	// Error says what is wrong: why the tool cannot be called, or, beside a version still
	// serving, why the newer one failed to load.
	Error      string           `json:"error,omitempty"`
	Definition *tool.Definition `json:"definition,omitempty"`
	// Env lists the variables the tool declares and whether each is set (never the values).
	Env []EnvStatus `json:"env,omitempty"`
	// Warnings are what loads yet is most likely a mistake in the definition (an unknown
	// field such as "timout"); the tool serves all the same.
	Warnings []string `json:"warnings,omitempty"`
	// Replaces is "builtin" for a folder tool that has a built-in's name and serves in its
	// place (the built-in is turned off).
	Replaces string `json:"replaces,omitempty"`
}

// EnvStatus says whether a declared variable has a value, without showing it.
type EnvStatus struct {
	Name string `json:"name"`
	Set  bool   `json:"set"`
	// Withheld is true for variables jean2 never hands to tools (provider keys).
	Withheld bool `json:"withheld,omitempty"`
}
