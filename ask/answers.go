package ask

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"

	"github.com/jean2/jean2/tool"
)

// maxAnswersFile bounds what LoadAnswers reads; a file of prepared answers is small.
const maxAnswersFile = 8 << 20

// Answers answers asks from a JSON file of prepared answers, for runs with no person at a
// terminal (tests, scripts, CI). The file is either
//
//   - an array of answers, used in the order the asks come, or
//   - an object mapping question text to its answer (a client_capability ask, which has no
//     question, is looked up by its capability).
//
// An answer has the shape the tool receives: permission and confirm take true or false (a
// permission may also be {"granted":true,"duration":"session"}); single_select takes one of
// the option values; multi_select an array of them; text a string; a form the full
// {"type":"form","answers":[…]} object or an array (of {question, answer} objects, or of
// plain answers in question order). null, or "" for text, takes the ask's defaultValue.
// In the object form, a form whose question is missing is answered from its questions' own
// keys when all of them are present.
type Answers struct {
	name string

	mu         sync.Mutex
	byQuestion map[string]json.RawMessage // used first, when the question is present
	queue      []json.RawMessage          // then these, in order
	next       int
}

var (
	_ tool.Asker      = (*Answers)(nil)
	_ PermissionAsker = (*Answers)(nil)
)

// LoadAnswers reads a file of prepared answers.
func LoadAnswers(path string) (*Answers, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("answers file: %w", err)
	}
	defer f.Close()
	var buf bytes.Buffer
	if _, err := buf.ReadFrom(io.LimitReader(f, maxAnswersFile+1)); err != nil {
		return nil, fmt.Errorf("answers file %s: %w", path, err)
	}
	if buf.Len() > maxAnswersFile {
		return nil, fmt.Errorf("answers file %s is larger than %d bytes", path, maxAnswersFile)
	}
	return ParseAnswers(path, buf.Bytes())
}

// ParseAnswers reads prepared answers from data; name says where they came from in errors.
func ParseAnswers(name string, data []byte) (*Answers, error) {
	data = bytes.TrimSpace(data)
	f := &Answers{name: name}
	switch {
	case len(data) > 0 && data[0] == '[':
		if err := json.Unmarshal(data, &f.queue); err != nil {
			return nil, fmt.Errorf("answers file %s: %w", name, err)
		}
	case len(data) > 0 && data[0] == '{':
		if err := json.Unmarshal(data, &f.byQuestion); err != nil {
			return nil, fmt.Errorf("answers file %s: %w", name, err)
		}
	default:
		return nil, fmt.Errorf(`answers file %s must hold a JSON array of answers (used in order) or an object mapping each question to its answer, e.g. {"Which environment?": "prod"}`, name)
	}
	return f, nil
}

// Ask returns the prepared answer to a, checked against the ask.
func (f *Answers) Ask(ctx context.Context, a tool.Ask) (json.RawMessage, error) {
	if a.Type == tool.AskPermission {
		d, err := f.AskPermission(ctx, a)
		if err != nil {
			return nil, err
		}
		return json.Marshal(d.Granted)
	}
	if err := checkAsk(a); err != nil {
		return nil, fmt.Errorf("invalid ask: %w", err)
	}
	raw, where, err := f.take(a)
	if err != nil {
		return nil, err
	}
	v, err := fileAnswer(a, raw)
	if err != nil {
		return nil, f.invalid(a, where, err)
	}
	return v, nil
}

// AskPermission returns the prepared decision. A bare true lasts as long as the ask suggests,
// or for this call when it suggests nothing.
func (f *Answers) AskPermission(ctx context.Context, a tool.Ask) (Decision, error) {
	if a.Type != tool.AskPermission {
		return Decision{}, fmt.Errorf("AskPermission needs a permission ask, not %q", a.Type)
	}
	if err := checkAsk(a); err != nil {
		return Decision{}, fmt.Errorf("invalid ask: %w", err)
	}
	raw, where, err := f.take(a)
	if err != nil {
		return Decision{}, err
	}
	fallback := a.Duration
	if fallback == "" {
		fallback = tool.DurationOnce
	}
	d, err := decisionFrom(asTerminalAccepts(a, bytes.TrimSpace(raw)), fallback)
	if err != nil {
		return Decision{}, f.invalid(a, where, err)
	}
	return d, nil
}

// take finds the answer for a: by question in the object form, else the next one in order.
func (f *Answers) take(a tool.Ask) (json.RawMessage, string, error) {
	key := a.Question
	if a.Type == tool.AskClientCapability && key == "" {
		key = a.Capability
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if v, ok := f.byQuestion[key]; ok {
		return v, fmt.Sprintf("key %q", key), nil
	}
	if a.Type == tool.AskForm && f.byQuestion != nil {
		parts := make([]json.RawMessage, 0, len(a.Questions))
		for _, q := range a.Questions {
			v, ok := f.byQuestion[q.Question]
			if !ok {
				break
			}
			parts = append(parts, v)
		}
		if len(parts) == len(a.Questions) {
			v, err := json.Marshal(parts)
			return v, "the keys of the form's questions", err
		}
	}
	if f.next < len(f.queue) {
		f.next++
		return f.queue[f.next-1], fmt.Sprintf("answer %d", f.next), nil
	}
	if f.byQuestion != nil {
		return nil, "", fmt.Errorf("answers file %s has no answer for %s ask %q: add %q: %s to its object", f.name, a.Type, key, key, fileExpected(a))
	}
	return nil, "", fmt.Errorf("answers file %s has only %d answers, none left for %s ask %q: add %s to its array", f.name, len(f.queue), a.Type, key, fileExpected(a))
}

func (f *Answers) invalid(a tool.Ask, where string, err error) error {
	return fmt.Errorf("answers file %s, %s, for %s ask %q: %v; the file should contain %s", f.name, where, a.Type, a.Question, err, fileExpected(a))
}

// fileExpected is expected, with the extra shapes a file may use.
func fileExpected(a tool.Ask) string {
	switch a.Type {
	case tool.AskPermission:
		return `true, false or {"granted":true,"duration":"once|session|workspace"}`
	case tool.AskForm:
		return `an array with one answer per question (in order), or {"type":"form","answers":[{"question":…,"answer":…}]}`
	}
	return expected(a)
}

// fileAnswer turns a prepared answer into the tool's answer: defaults for null (or "" for
// text), forms given as arrays, and the same checks as any other answer.
func fileAnswer(a tool.Ask, raw json.RawMessage) (json.RawMessage, error) {
	raw = bytes.TrimSpace(raw)
	if d := defaultOf(a); d != nil && (bytes.Equal(raw, []byte("null")) || (a.Type == tool.AskText && bytes.Equal(raw, []byte(`""`)))) {
		raw = d
	}
	raw = asTerminalAccepts(a, raw)
	if a.Type == tool.AskForm && len(raw) > 0 && raw[0] == '[' {
		var items []json.RawMessage
		if err := json.Unmarshal(raw, &items); err != nil {
			return nil, err
		}
		answers := make([]tool.FormAnswer, 0, len(items))
		if allFormAnswers(items) {
			for _, it := range items {
				var fa tool.FormAnswer
				_ = json.Unmarshal(it, &fa)
				answers = append(answers, fa)
			}
		} else {
			if len(items) != len(a.Questions) {
				return nil, fmt.Errorf("the form has %d questions but the array holds %d answers", len(a.Questions), len(items))
			}
			for i, it := range items {
				answers = append(answers, tool.FormAnswer{Question: a.Questions[i].Question, Answer: it})
			}
		}
		// Defaults apply inside forms too.
		for i := range answers {
			for _, q := range a.Questions {
				if q.Question == answers[i].Question {
					if v, err := fileAnswer(q, answers[i].Answer); err == nil {
						answers[i].Answer = v
					}
					break
				}
			}
		}
		b, err := json.Marshal(tool.FormResponse{Type: tool.AskForm, Answers: answers})
		if err != nil {
			return nil, err
		}
		raw = b
	}
	return checkAnswer(a, raw)
}

// allFormAnswers reports whether every item is a {question, answer} object.
func allFormAnswers(items []json.RawMessage) bool {
	if len(items) == 0 {
		return false
	}
	for _, it := range items {
		var m map[string]json.RawMessage
		if json.Unmarshal(it, &m) != nil || len(m) != 2 {
			return false
		}
		var q string
		if json.Unmarshal(m["question"], &q) != nil {
			return false
		}
		if _, ok := m["answer"]; !ok {
			return false
		}
	}
	return true
}

// asTerminalAccepts reads an answer the way the terminal reads a typed one: "y", "yes",
// "n", "no" (any case) for a confirm or a permission, and an option's label (any case) or
// its number from 1 for a select, where the option's value is wanted. An answer that
// already has the right shape is left as it is.
func asTerminalAccepts(a tool.Ask, raw json.RawMessage) json.RawMessage {
	switch a.Type {
	case tool.AskConfirm, tool.AskPermission:
		var s string
		if json.Unmarshal(raw, &s) == nil {
			switch strings.ToLower(strings.TrimSpace(s)) {
			case "y", "yes", "true":
				return json.RawMessage("true")
			case "n", "no", "false":
				return json.RawMessage("false")
			}
		}
	case tool.AskSingleSelect:
		return optionByLabel(a, raw)
	case tool.AskMultiSelect:
		var items []json.RawMessage
		if json.Unmarshal(raw, &items) != nil {
			return raw
		}
		for i := range items {
			items[i] = optionByLabel(a, items[i])
		}
		if b, err := json.Marshal(items); err == nil {
			return b
		}
	}
	return raw
}

// optionByLabel is the value of the option raw names by label, or by number, when raw is
// no option's value; raw otherwise.
func optionByLabel(a tool.Ask, raw json.RawMessage) json.RawMessage {
	if findOption(a, raw) >= 0 {
		return raw
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if i, ok := choose(a, strings.TrimSpace(s)); ok {
			return optionValue(a.Options[i])
		}
		return raw
	}
	var n int
	if json.Unmarshal(raw, &n) == nil && n >= 1 && n <= len(a.Options) {
		return optionValue(a.Options[n-1])
	}
	return raw
}
