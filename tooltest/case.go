// Package tooltest runs the test cases kept in a tool folder (`jean2 tools test`): each case
// calls the tool once, in a real worker under the host's real policy, with a fixture
// workspace, declared variables, scripted answers to its asks and a stub model for ctx.llm,
// then compares what came of the call with what the case expects.
//
// Cases are declarative JSON files, tests/*.json in the tool folder (a file holds one case
// or an array of them). JSON rather than a *.test.ts API: the same file tests a TypeScript,
// JavaScript or Go tool; nothing of the test runs inside the worker, so the tool runs exactly
// as it will in use (same bundle, same sandbox, same context); and a case is data a person or
// a model can read and write without a test framework's types. See docs/writing-tools.md.
package tooltest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Dir is the folder of a tool that holds its cases.
const Dir = "tests"

// SnapshotDir holds the golden visualizations, under Dir.
const SnapshotDir = "__snapshots__"

// maxCaseFile bounds a case file; cases are small.
const maxCaseFile = 8 << 20

// Case is one test of a tool.
type Case struct {
	// Name identifies the case in the report; default: the file's name (and its index in
	// an array).
	Name string `json:"name"`
	// Tool is the tool to call; default: the folder's tool.
	Tool string `json:"tool,omitempty"`
	// Input is the call's arguments (default {}).
	Input json.RawMessage `json:"input,omitempty"`
	// Workspace is the call's workspace, made fresh for the case.
	Workspace Workspace `json:"workspace"`
	// Env gives declared variables their values for this case (nothing else is set: the
	// person's .env and environment do not reach a test).
	Env map[string]string `json:"env,omitempty"`
	// Answers answers the tool's asks, in the answers file's format: an array used in
	// order, or an object by question. Labels and yes/no are accepted, as on a terminal.
	// Without it, an ask fails as it would with no one to answer.
	Answers json.RawMessage `json:"answers,omitempty"`
	// LLM scripts the stub model behind ctx.llm: each call takes the next reply.
	LLM []LLMReply `json:"llm,omitempty"`
	// Expect is what the call must come to.
	Expect Expect `json:"expect"`

	file  string // the case file, relative to the tool folder
	index int    // its index in the file's array; -1 for a file of one case
}

// Workspace is a case's fixture workspace: the files of From (a folder relative to the
// tool folder) copied, then Files written over them.
type Workspace struct {
	From  string            `json:"from,omitempty"`
	Files map[string]string `json:"files,omitempty"`
}

// LLMReply is one reply of the stub model: Text answers ctx.llm.generateText, JSON answers
// ctx.llm.generateStructured, Error fails the call with that message.
type LLMReply struct {
	Text  *string         `json:"text,omitempty"`
	JSON  json.RawMessage `json:"json,omitempty"`
	Error string          `json:"error,omitempty"`
	// Prompt, when set, must appear in the request's prompt.
	Prompt string `json:"prompt,omitempty"`
}

// Expect is what a case checks. Every field is optional; results, visualizations, asks and
// ledger entries match partially (an expected object's keys must be there with matching
// values; other keys may be there too). The workspace path in what the tool returns reads
// "$WORKSPACE".
type Expect struct {
	Success *bool           `json:"success,omitempty"`
	Result  json.RawMessage `json:"result,omitempty"`
	// Error must appear in the failed result's error.
	Error string `json:"error,omitempty"`
	// Visualization is a partial match, or "snapshot": the whole visualization is compared
	// with tests/__snapshots__/<case>.json, which --update rewrites.
	Visualization json.RawMessage `json:"visualization,omitempty"`
	// Asks are the asks the tool made, in order (partial match each); [] says none.
	Asks []json.RawMessage `json:"asks,omitempty"`
	// Files are workspace files after the call: their content, or null for "absent".
	Files map[string]*string `json:"files,omitempty"`
	// Ledger are changes the call recorded, in order, among others (partial match each;
	// paths relative to the workspace).
	Ledger []json.RawMessage `json:"ledger,omitempty"`
	// Refused are what the host or the sandbox refused the tool (a ctx.fs change outside
	// its scope, its own code reading a protected path, a network host): each must appear
	// in one refusal. [] says nothing was refused.
	Refused []string `json:"refused,omitempty"`
	// LLMCalls is how many times the tool called the model; nil: not checked.
	LLMCalls *int `json:"llmCalls,omitempty"`

	asksSet, refusedSet bool
}

// UnmarshalJSON notes which of the list fields were given, so that [] means "none".
func (e *Expect) UnmarshalJSON(data []byte) error {
	type plain Expect
	var p plain
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return err
	}
	*e = Expect(p)
	var keys map[string]json.RawMessage
	_ = json.Unmarshal(data, &keys)
	_, e.asksSet = keys["asks"]
	_, e.refusedSet = keys["refused"]
	return nil
}

// File is where the case was read from ("tests/read.json", or "tests/all.json#2").
func (c Case) File() string {
	if c.index >= 0 {
		return fmt.Sprintf("%s#%d", c.file, c.index+1)
	}
	return c.file
}

// snapshotName is the golden file of the case's visualization.
func (c Case) snapshotName() string {
	base := strings.TrimSuffix(filepath.Base(c.file), ".json")
	if c.index >= 0 {
		base = fmt.Sprintf("%s.%d", base, c.index+1)
	}
	return base + ".json"
}

// Load reads the cases of a tool folder, sorted by file. A folder without tests/ has none.
func Load(toolDir string) ([]Case, error) {
	dir := filepath.Join(toolDir, Dir)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".json") && !strings.HasPrefix(e.Name(), ".") {
			names = append(names, e.Name())
		}
	}
	sort.Strings(names)
	var out []Case
	for _, n := range names {
		rel := Dir + "/" + n
		cases, err := parseFile(filepath.Join(dir, n), rel)
		if err != nil {
			return nil, err
		}
		out = append(out, cases...)
	}
	return out, nil
}

func parseFile(path, rel string) ([]Case, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if st.Size() > maxCaseFile {
		return nil, fmt.Errorf("%s is larger than %d bytes", rel, maxCaseFile)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	data = bytes.TrimSpace(data)
	var raws []json.RawMessage
	index := -1
	if len(data) > 0 && data[0] == '[' {
		if err := json.Unmarshal(data, &raws); err != nil {
			return nil, fmt.Errorf("%s: %v", rel, err)
		}
		index = 0
	} else {
		raws = []json.RawMessage{data}
	}
	base := strings.TrimSuffix(filepath.Base(rel), ".json")
	var out []Case
	for i, raw := range raws {
		var c Case
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.DisallowUnknownFields()
		where := rel
		if index >= 0 {
			where = fmt.Sprintf("%s, case %d", rel, i+1)
		}
		if err := dec.Decode(&c); err != nil {
			return nil, fmt.Errorf("%s: %v (a case has name, tool, input, workspace, env, answers, llm and expect)", where, err)
		}
		c.file = rel
		c.index = -1
		if index >= 0 {
			c.index = i
		}
		if c.Name == "" {
			c.Name = base
			if index >= 0 {
				c.Name = fmt.Sprintf("%s #%d", base, i+1)
			}
		}
		if len(c.Input) == 0 {
			c.Input = json.RawMessage("{}")
		}
		for p := range c.Workspace.Files {
			if err := relativeInside(p); err != nil {
				return nil, fmt.Errorf("%s: workspace.files %q: %v", where, p, err)
			}
		}
		for p := range c.Expect.Files {
			if err := relativeInside(p); err != nil {
				return nil, fmt.Errorf("%s: expect.files %q: %v", where, p, err)
			}
		}
		for i, r := range c.LLM {
			n := 0
			if r.Text != nil {
				n++
			}
			if r.JSON != nil {
				n++
			}
			if r.Error != "" {
				n++
			}
			if n != 1 {
				return nil, fmt.Errorf("%s: llm[%d] needs exactly one of text, json and error", where, i)
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// relativeInside refuses a fixture path that would leave the workspace.
func relativeInside(p string) error {
	if p == "" || filepath.IsAbs(p) {
		return errors.New("give a path relative to the workspace")
	}
	if c := filepath.Clean(filepath.FromSlash(p)); c == ".." || strings.HasPrefix(c, ".."+string(filepath.Separator)) {
		return errors.New("the path leaves the workspace")
	}
	return nil
}
