package tool

import (
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"time"
)

// DefaultTimeout is used when a definition gives no timeout.
const DefaultTimeout = 30 * time.Second

// CapabilityInteractiveUserInput marks a tool that needs a person; it is not offered in
// unattended runs.
const CapabilityInteractiveUserInput = "interactive-user-input"

// Definition describes a tool: the jean2 ToolDefinition, with the Jx extras.
type Definition struct {
	Name         string          `json:"name"`
	Title        string          `json:"title,omitempty"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"inputSchema"`
	OutputSchema json.RawMessage `json:"outputSchema,omitempty"`
	// Timeout in milliseconds; 0 means DefaultTimeout.
	Timeout      int          `json:"timeout,omitempty"`
	Env          []string     `json:"env,omitempty"`
	Capabilities []string     `json:"capabilities,omitempty"`
	Interactive  bool         `json:"interactive,omitempty"`
	Strict       *bool        `json:"strict,omitempty"`
	Annotations  *Annotations `json:"annotations,omitempty"`
	Permissions  *Permissions `json:"permissions,omitempty"`
	// Execution says how the tool's calls may run (as MCP names it).
	Execution *Execution `json:"execution,omitempty"`
}

// Task support of a tool (Execution.TaskSupport): whether a call may run as a task, which
// answers the caller at once with a task to poll while the call goes on.
const (
	TaskForbidden = "forbidden" // the default: the caller waits for the result
	TaskOptional  = "optional"  // a task for a client that takes tasks, else a plain call
	TaskRequired  = "required"  // only as a task: a client that takes none is refused
)

// Execution says how a tool's calls may run.
type Execution struct {
	TaskSupport string `json:"taskSupport,omitempty"`
	// TaskAfterInput makes a call that would be a task of MCP's tasks extension ask its
	// first questions by input-required rounds (the client calls again with the answers)
	// and become a task only when the answers come: for a tool that gathers what it needs
	// and then works long. A call that ends before it asks is a plain call. Only with
	// TaskSupport optional or required; jean2 keeps it to itself (tools/list does not show it).
	TaskAfterInput bool `json:"taskAfterInput,omitempty"`
}

// TaskSupport is the definition's task support, TaskForbidden when it says none.
func (d Definition) TaskSupport() string {
	if d.Execution == nil || d.Execution.TaskSupport == "" {
		return TaskForbidden
	}
	return d.Execution.TaskSupport
}

// Annotations are hints about a tool's behaviour (as MCP names them).
type Annotations struct {
	ReadOnlyHint    *bool `json:"readOnlyHint,omitempty"`
	DestructiveHint *bool `json:"destructiveHint,omitempty"`
	IdempotentHint  *bool `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool `json:"openWorldHint,omitempty"`
}

// Permissions a tool declares beyond its context (enforced by the sandbox).
type Permissions struct {
	Read         []string `json:"read,omitempty"`
	Write        []string `json:"write,omitempty"`
	ChildProcess bool     `json:"childProcess,omitempty"`
	// MemoryMB is a memory cap above the host's that the tool's package.json asks for
	// ("jean2": {"memoryMB": N}); the host sets it from there, never from the definition,
	// so that a raised cap is approved like the rest of the declaration.
	MemoryMB int `json:"memoryMB,omitempty"`
	// Network are the hosts the tool's workers may connect to, through the host's egress
	// proxy: "api.github.com", "*.example.com:443", "127.0.0.1:8080", "10.0.0.0/8" (see
	// sandbox/egress). Without it a confined worker has no network at all.
	Network []string `json:"network,omitempty"`
	// Data names another tool whose persistent data folder this tool's workers see at
	// $JEAN2_HOME/data instead of their own: tools that keep one database between them (the
	// original catalogue's todowrite and todoread share todos.db). Approved or granted like
	// the rest.
	Data string `json:"data,omitempty"`
}

// TimeoutDuration is the call timeout the definition asks for.
func (d Definition) TimeoutDuration() time.Duration {
	if d.Timeout <= 0 {
		return DefaultTimeout
	}
	return time.Duration(d.Timeout) * time.Millisecond
}

// IsStrict reports whether arguments are validated against InputSchema (default true).
func (d Definition) IsStrict() bool { return d.Strict == nil || *d.Strict }

// ReadOnly reports whether the definition says the tool does not change anything.
func (d Definition) ReadOnly() bool {
	return d.Annotations != nil && d.Annotations.ReadOnlyHint != nil && *d.Annotations.ReadOnlyHint
}

var (
	toolNamePattern = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`)
	envNamePattern  = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)
)

// Check reports the first thing wrong with the definition, in words that say how to fix it.
// It also compiles the schemas, so an invalid JSON Schema is caught here.
func (d Definition) Check() error {
	_, err := d.check()
	return err
}

// check is Check, returning the compiled input schema.
func (d Definition) check() (*Schema, error) {
	if d.Name == "" {
		return nil, fmt.Errorf("definition.name is empty: give the tool a name")
	}
	if !toolNamePattern.MatchString(d.Name) {
		return nil, fmt.Errorf("definition.name %q is not a valid tool name: use letters, digits, '_', '-' or '.', at most 128 characters", d.Name)
	}
	if d.Description == "" {
		return nil, fmt.Errorf("definition.description is empty: say what %s does (the model reads it)", d.Name)
	}
	if len(d.InputSchema) == 0 || string(d.InputSchema) == "null" {
		return nil, fmt.Errorf("definition.inputSchema is missing: give a JSON Schema for the arguments")
	}
	input, err := CompileSchema(d.InputSchema)
	if err != nil {
		return nil, fmt.Errorf("definition.inputSchema: %w", err)
	}
	var top struct {
		Type any `json:"type"`
	}
	if err := json.Unmarshal(d.InputSchema, &top); err != nil {
		return nil, fmt.Errorf("definition.inputSchema is not a JSON object: %w", err)
	}
	if top.Type != nil && top.Type != "object" {
		return nil, fmt.Errorf("definition.inputSchema.type is %v: tool arguments are an object, use \"object\"", top.Type)
	}
	if len(d.OutputSchema) > 0 && string(d.OutputSchema) != "null" {
		if _, err := CompileSchema(d.OutputSchema); err != nil {
			return nil, fmt.Errorf("definition.outputSchema: %w", err)
		}
	}
	if d.Timeout < 0 {
		return nil, fmt.Errorf("definition.timeout is %d: give a positive number of milliseconds", d.Timeout)
	}
	for _, e := range d.Env {
		if !envNamePattern.MatchString(e) {
			return nil, fmt.Errorf("definition.env: %q is not an environment variable name", e)
		}
	}
	switch d.TaskSupport() {
	case TaskForbidden, TaskOptional, TaskRequired:
	default:
		return nil, fmt.Errorf("definition.execution.taskSupport is %q: use forbidden, optional or required", d.Execution.TaskSupport)
	}
	if d.Execution != nil && d.Execution.TaskAfterInput && d.TaskSupport() == TaskForbidden {
		return nil, errors.New("definition.execution.taskAfterInput needs taskSupport optional or required: a call that may not be a task cannot become one")
	}
	return input, nil
}
