package tool

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/jean2/jean2/policy"
)

// Ask types of the ask protocol.
const (
	AskPermission       = "permission"
	AskSingleSelect     = "single_select"
	AskMultiSelect      = "multi_select"
	AskText             = "text"
	AskConfirm          = "confirm"
	AskNumber           = "number"
	AskForm             = "form"
	AskClientCapability = "client_capability"
)

// Permission durations: how long a granted permission is remembered.
const (
	DurationOnce      = "once"
	DurationSession   = "session"
	DurationWorkspace = "workspace"
)

// Ask is one request of ctx.ask: a permission, a question to a person, a form, or a
// capability of the client. Which fields apply depends on Type.
type Ask struct {
	Type         string          `json:"type"`
	Target       string          `json:"target,omitempty"` // "human" or "client"
	Question     string          `json:"question,omitempty"`
	Description  string          `json:"description,omitempty"`
	Risk         string          `json:"risk,omitempty"`
	Resource     string          `json:"resource,omitempty"`
	Paths        []string        `json:"paths,omitempty"`
	Patterns     []string        `json:"patterns,omitempty"`
	Duration     string          `json:"duration,omitempty"`
	Metadata     json.RawMessage `json:"metadata,omitempty"`
	Options      []Option        `json:"options,omitempty"`
	Min          *int            `json:"min,omitempty"`
	Max          *int            `json:"max,omitempty"`
	Placeholder  string          `json:"placeholder,omitempty"`
	DefaultValue json.RawMessage `json:"defaultValue,omitempty"`
	Questions    []Ask           `json:"questions,omitempty"`
	Capability   string          `json:"capability,omitempty"`
	// Key names the ask where a client keys asks by name: an MCP client on 2026-07-28
	// sees it under this key in an input-required result's inputRequests (else ask-N),
	// and may answer it in advance, in the call's own inputResponses.
	Key string `json:"key,omitempty"`
	// Name names a question's field where a client fills in forms: an MCP elicitation's
	// property (else "answer" for a lone question, qN for a form's Nth).
	Name string `json:"name,omitempty"`
	// Integer, Minimum and Maximum bound a number ask's answer.
	Integer bool     `json:"integer,omitempty"`
	Minimum *float64 `json:"minimum,omitempty"`
	Maximum *float64 `json:"maximum,omitempty"`
	// LegacyEnumNames sends a single select's choices to an MCP client as enum and
	// enumNames, the titled form of clients before MCP 2025-11-25, instead of oneOf.
	LegacyEnumNames bool `json:"legacyEnumNames,omitempty"`
}

// askNames are what Key and Name may be: short, and plain enough for any client's keys.
var askNames = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,64}$`)

// Option is one choice of a select ask.
type Option struct {
	Label       string          `json:"label"`
	Value       json.RawMessage `json:"value"`
	Description string          `json:"description,omitempty"`
}

// FormAnswer is one answer of a form.
type FormAnswer struct {
	Question string          `json:"question"`
	Answer   json.RawMessage `json:"answer"`
}

// FormResponse is what a form ask returns to the tool.
type FormResponse struct {
	Type    string       `json:"type"` // always "form"
	Answers []FormAnswer `json:"answers"`
}

var risks = map[string]bool{"": true, "low": true, "medium": true, "high": true, "critical": true}

// Check reports what is wrong with an ask, so a tool author sees a precise error.
func (a Ask) Check() error {
	if err := a.checkNames(); err != nil {
		return err
	}
	switch a.Type {
	case AskPermission:
		if a.Question == "" {
			return fmt.Errorf("permission ask needs a question")
		}
		if !risks[a.Risk] {
			return fmt.Errorf("permission ask: risk %q is not one of low, medium, high, critical", a.Risk)
		}
		switch a.Duration {
		case "", DurationOnce, DurationSession, DurationWorkspace:
		default:
			return fmt.Errorf("permission ask: duration %q is not one of once, session, workspace", a.Duration)
		}
	case AskSingleSelect, AskMultiSelect:
		if a.Question == "" {
			return fmt.Errorf("%s ask needs a question", a.Type)
		}
		if len(a.Options) == 0 {
			return fmt.Errorf("%s ask %q has no options", a.Type, a.Question)
		}
		for i, o := range a.Options {
			if o.Label == "" {
				return fmt.Errorf("%s ask %q: option %d has no label", a.Type, a.Question, i)
			}
		}
	case AskText, AskConfirm:
		if a.Question == "" {
			return fmt.Errorf("%s ask needs a question", a.Type)
		}
	case AskNumber:
		if a.Question == "" {
			return fmt.Errorf("number ask needs a question")
		}
		if a.Minimum != nil && a.Maximum != nil && *a.Minimum > *a.Maximum {
			return fmt.Errorf("number ask %q: minimum %v is above maximum %v", a.Question, *a.Minimum, *a.Maximum)
		}
	case AskForm:
		return a.checkForm()
	case AskClientCapability:
		if a.Capability == "" {
			return fmt.Errorf("client_capability ask needs a capability")
		}
	case "":
		return fmt.Errorf("ask has no type: use permission, single_select, multi_select, text, number, confirm, form or client_capability")
	default:
		return fmt.Errorf("ask type %q is unknown: use permission, single_select, multi_select, text, number, confirm, form or client_capability", a.Type)
	}
	return nil
}

// checkForm checks a form's questions and that their names, where given, differ.
func (a Ask) checkForm() error {
	if len(a.Questions) == 0 {
		return fmt.Errorf("form ask %q has no questions", a.Question)
	}
	names := map[string]bool{}
	for i, q := range a.Questions {
		switch q.Type {
		case AskSingleSelect, AskMultiSelect, AskText, AskNumber, AskConfirm:
		default:
			return fmt.Errorf("form ask %q: question %d has type %q; a form holds single_select, multi_select, text, number or confirm", a.Question, i, q.Type)
		}
		if err := q.Check(); err != nil {
			return fmt.Errorf("form ask %q: question %d: %w", a.Question, i, err)
		}
		if q.Name != "" && names[q.Name] {
			return fmt.Errorf("form ask %q: question %d: another question is named %q", a.Question, i, q.Name)
		}
		names[q.Name] = true
	}
	return nil
}

// checkNames checks an ask's key and its questions' names: plain, and unique in a form.
func (a Ask) checkNames() error {
	if a.Key != "" && !askNames.MatchString(a.Key) {
		return fmt.Errorf("%s ask: key %q is not 1 to 64 letters, digits, '_', '.' or '-'", a.Type, a.Key)
	}
	if a.Name != "" && !askNames.MatchString(a.Name) {
		return fmt.Errorf("%s ask: name %q is not 1 to 64 letters, digits, '_', '.' or '-'", a.Type, a.Name)
	}
	seen := map[string]bool{}
	for i, q := range a.Questions {
		if q.Key != "" {
			return fmt.Errorf("form ask %q: question %d has a key; a key names a whole ask (name a question with name)", a.Question, i)
		}
		if q.Name != "" && seen[q.Name] {
			return fmt.Errorf("form ask %q: two questions are named %q", a.Question, q.Name)
		}
		seen[q.Name] = true
	}
	return nil
}

// Asker answers asks: a person at a terminal or a web client, an MCP client, or a policy.
// The answer is JSON of the shape the ask type defines (boolean for permission and confirm).
type Asker interface {
	Ask(ctx context.Context, a Ask) (json.RawMessage, error)
}

// AskerFunc adapts a function to Asker.
type AskerFunc func(ctx context.Context, a Ask) (json.RawMessage, error)

// Ask calls f.
func (f AskerFunc) Ask(ctx context.Context, a Ask) (json.RawMessage, error) { return f(ctx, a) }

// ErrNoOneToAsk is returned by the detached asker.
var ErrNoOneToAsk = fmt.Errorf("no one can answer asks here: the call has no attached person or client")

// FilePermission describes a file access that needs approval.
type FilePermission struct {
	Path               string
	Operation          string // read, write, edit
	Risk               string
	Reason             string
	IsOutsideWorkspace bool
	IsSensitiveFile    bool
}

// CreateFilePermissionAsk builds the permission ask of @jean2/sdk's createFilePermissionAsk.
func CreateFilePermissionAsk(p FilePermission) Ask {
	verb := map[string]string{"read": "Reading", "write": "Writing", "edit": "Editing"}[p.Operation]
	if verb == "" {
		verb = "Accessing"
	}
	base := filepath.Base(p.Path)
	var q strings.Builder
	fmt.Fprintf(&q, "%s file \"%s\"", verb, base) // the name as is, between quotes (REFERENCE §5)
	if p.IsSensitiveFile {
		q.WriteString(" (sensitive file)")
	} else if p.IsOutsideWorkspace {
		q.WriteString(" (outside workspace)")
	}
	q.WriteString(" requires approval.")
	if p.Reason != "" {
		q.WriteString(" " + p.Reason)
	}
	patterns := []string{"file:" + p.Path, "file:" + base}
	if p.IsOutsideWorkspace {
		patterns = append(patterns, "outside-workspace")
	}
	if p.IsSensitiveFile {
		patterns = append(patterns, "sensitive-file")
	}
	duration := DurationWorkspace
	if p.IsSensitiveFile || p.Risk == "high" || p.Risk == "critical" {
		duration = DurationSession
	}
	// The same metadata keys as @jean2/sdk (and jean2's catalogue SDK before it): clients
	// show them and grants record them.
	meta, _ := json.Marshal(struct {
		Operation          string `json:"operation"`
		Path               string `json:"path"`
		FileName           string `json:"fileName"`
		IsOutsideWorkspace bool   `json:"isOutsideWorkspace"`
		IsSensitiveFile    bool   `json:"isSensitiveFile"`
		Reason             string `json:"reason,omitempty"`
	}{p.Operation, p.Path, base, p.IsOutsideWorkspace, p.IsSensitiveFile, p.Reason})
	return Ask{
		Type: AskPermission, Question: q.String(), Risk: p.Risk, Resource: "file",
		Paths: []string{p.Path}, Patterns: patterns, Duration: duration, Metadata: meta,
	}
}

// SensitiveFilePatterns lists the substrings that make a path sensitive.
var SensitiveFilePatterns = policy.SensitivePatterns()
