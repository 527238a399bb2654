package ask

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"strings"

	"github.com/jean2/jean2/tool"
)

// checkAsk reports what is wrong with an ask: tool.Ask.Check plus what makes an ask
// impossible to answer (a multi_select that can never satisfy its min/max, a default value of
// the wrong shape), so the tool author learns it at once rather than a person being stuck.
func checkAsk(a tool.Ask) error {
	if err := a.Check(); err != nil {
		return err
	}
	return checkAskDetails(a)
}

func checkAskDetails(a tool.Ask) error {
	hasDefault := len(a.DefaultValue) > 0 && !bytes.Equal(bytes.TrimSpace(a.DefaultValue), []byte("null"))
	for i, o := range a.Options {
		if v := bytes.TrimSpace(o.Value); len(v) > 0 && !json.Valid(v) {
			return fmt.Errorf("%s ask %q: option %d (%q) has a value that is not JSON", a.Type, a.Question, i, o.Label)
		}
	}
	switch a.Type {
	case tool.AskMultiSelect:
		if a.Min != nil && *a.Min < 0 {
			return fmt.Errorf("multi_select ask %q: min %d is negative", a.Question, *a.Min)
		}
		if a.Max != nil && *a.Max < 1 {
			return fmt.Errorf("multi_select ask %q: max %d allows no choice; use max of 1 or more", a.Question, *a.Max)
		}
		lo, hi := bounds(a)
		if lo > len(a.Options) {
			return fmt.Errorf("multi_select ask %q: min %d is more than its %d options", a.Question, lo, len(a.Options))
		}
		if lo > hi {
			return fmt.Errorf("multi_select ask %q: min %d is more than max %d", a.Question, lo, hi)
		}
	case tool.AskForm:
		for i, q := range a.Questions {
			if err := checkAskDetails(q); err != nil {
				return fmt.Errorf("form ask %q: question %d: %w", a.Question, i, err)
			}
		}
	}
	if hasDefault {
		switch a.Type {
		case tool.AskSingleSelect, tool.AskMultiSelect, tool.AskText, tool.AskNumber, tool.AskConfirm:
			if _, err := checkAnswer(a, a.DefaultValue); err != nil {
				return fmt.Errorf("%s ask %q: defaultValue %s is not a valid answer: it should be %s", a.Type, a.Question, clip(a.DefaultValue), expected(a))
			}
		}
	}
	return nil
}

// defaultOf returns the ask's default answer, or nil when it has none.
func defaultOf(a tool.Ask) json.RawMessage {
	d := bytes.TrimSpace(a.DefaultValue)
	if len(d) == 0 || bytes.Equal(d, []byte("null")) {
		return nil
	}
	if _, err := checkAnswer(a, d); err != nil {
		return nil
	}
	return d
}

// bounds returns how many options a multi_select answer must hold at least and at most.
func bounds(a tool.Ask) (lo, hi int) {
	hi = len(a.Options)
	if a.Min != nil {
		lo = *a.Min
	}
	if a.Max != nil && *a.Max < hi {
		hi = *a.Max
	}
	return lo, hi
}

// optionValue is what choosing o answers. An option without a value answers its label, so a
// tool that leaves values out still receives something it can compare.
func optionValue(o tool.Option) json.RawMessage {
	v := bytes.TrimSpace(o.Value)
	if len(v) == 0 {
		b, _ := json.Marshal(o.Label)
		return b
	}
	var buf bytes.Buffer
	if json.Compact(&buf, v) != nil {
		return v // checkAsk refuses such an option before anyone sees it
	}
	return buf.Bytes()
}

// findOption returns the index of the option whose value equals v as JSON, or -1.
func findOption(a tool.Ask, v json.RawMessage) int {
	var want any
	if err := json.Unmarshal(v, &want); err != nil {
		return -1
	}
	for i, o := range a.Options {
		var have any
		if err := json.Unmarshal(optionValue(o), &have); err == nil && reflect.DeepEqual(have, want) {
			return i
		}
	}
	return -1
}

// checkAnswer reports whether answer has the shape the ask type promises the tool and
// returns it compacted (a form answer in question order). Its errors say what is wrong;
// callers add what a right answer looks like (expected), in the words of their source.
func checkAnswer(a tool.Ask, answer json.RawMessage) (json.RawMessage, error) {
	answer = bytes.TrimSpace(answer)
	if len(answer) == 0 {
		return nil, fmt.Errorf("no answer was given")
	}
	if !json.Valid(answer) {
		return nil, fmt.Errorf("answer %s is not JSON", clip(answer))
	}
	wrong := func() error { return fmt.Errorf("answer %s is not %s", clip(answer), kind(a)) }
	switch a.Type {
	case tool.AskPermission, tool.AskConfirm:
		var b bool
		if json.Unmarshal(answer, &b) != nil {
			return nil, wrong()
		}
	case tool.AskText:
		var s string
		if json.Unmarshal(answer, &s) != nil {
			return nil, wrong()
		}
	case tool.AskNumber:
		var n float64
		if json.Unmarshal(answer, &n) != nil || !inRange(a, n) {
			return nil, wrong()
		}
	case tool.AskSingleSelect:
		if findOption(a, answer) < 0 {
			return nil, wrong()
		}
	case tool.AskMultiSelect:
		var vals []json.RawMessage
		if json.Unmarshal(answer, &vals) != nil {
			return nil, wrong()
		}
		seen := make(map[int]bool, len(vals))
		for _, v := range vals {
			i := findOption(a, v)
			if i < 0 {
				return nil, fmt.Errorf("answer %s chooses %s, which is not an option", clip(answer), clip(v))
			}
			if seen[i] {
				return nil, fmt.Errorf("answer %s chooses %s twice", clip(answer), clip(v))
			}
			seen[i] = true
		}
		if lo, hi := bounds(a); len(vals) < lo || len(vals) > hi {
			return nil, fmt.Errorf("answer %s chooses %d options, not %s", clip(answer), len(vals), countPhrase(bounds(a)))
		}
	case tool.AskForm:
		return checkFormAnswer(a, answer)
	case tool.AskClientCapability:
		// Whatever the client returns is the tool's to interpret.
	default:
		return nil, fmt.Errorf("ask type %q has no answer shape", a.Type)
	}
	var buf bytes.Buffer
	if err := json.Compact(&buf, answer); err != nil {
		return nil, wrong()
	}
	return buf.Bytes(), nil
}

// checkFormAnswer matches the answers of a form to its questions by question text (in order,
// so two questions with the same text take answers in turn) and checks each one.
func checkFormAnswer(a tool.Ask, answer json.RawMessage) (json.RawMessage, error) {
	var resp struct {
		Type    string            `json:"type"`
		Answers []tool.FormAnswer `json:"answers"`
	}
	if err := json.Unmarshal(answer, &resp); err != nil || resp.Type != tool.AskForm {
		return nil, wrongForm(answer)
	}
	used := make([]bool, len(resp.Answers))
	out := tool.FormResponse{Type: tool.AskForm, Answers: make([]tool.FormAnswer, 0, len(a.Questions))}
	for _, q := range a.Questions {
		found := -1
		for i, fa := range resp.Answers {
			if !used[i] && fa.Question == q.Question {
				found = i
				break
			}
		}
		if found < 0 {
			return nil, fmt.Errorf("form answer has no answer to question %q", q.Question)
		}
		used[found] = true
		v, err := checkAnswer(q, resp.Answers[found].Answer)
		if err != nil {
			return nil, fmt.Errorf("form answer to question %q: %w (it should be %s)", q.Question, err, expected(q))
		}
		out.Answers = append(out.Answers, tool.FormAnswer{Question: q.Question, Answer: v})
	}
	for i, u := range used {
		if !u {
			return nil, fmt.Errorf("form answer answers %q, which the form does not ask", resp.Answers[i].Question)
		}
	}
	return json.Marshal(out)
}

func wrongForm(answer json.RawMessage) error {
	return fmt.Errorf("answer %s is not a form answer", clip(answer))
}

// kind names the shape of an answer to a, for saying that an answer is not of it.
func kind(a tool.Ask) string {
	switch a.Type {
	case tool.AskPermission, tool.AskConfirm:
		return "true or false"
	case tool.AskText:
		return "a string"
	case tool.AskNumber:
		return numberPhrase(a)
	case tool.AskSingleSelect:
		return "one of the option values"
	case tool.AskMultiSelect:
		return "an array of option values"
	}
	return "an answer of type " + a.Type
}

// expected describes a valid answer to a, for error messages that say how to fix one.
func expected(a tool.Ask) string {
	switch a.Type {
	case tool.AskPermission, tool.AskConfirm:
		return "true or false"
	case tool.AskText:
		return "a string"
	case tool.AskNumber:
		return numberPhrase(a)
	case tool.AskSingleSelect:
		return "one of the option values " + optionList(a)
	case tool.AskMultiSelect:
		lo, hi := bounds(a)
		return fmt.Sprintf("an array of %s of the option values %s", countPhrase(lo, hi), optionList(a))
	case tool.AskForm:
		return `{"type":"form","answers":[{"question":…,"answer":…}]} with one answer per question`
	case tool.AskClientCapability:
		return "any JSON value"
	}
	return "an answer"
}

// inRange reports whether n answers a number ask: whole when it asks for an integer, and
// within its bounds.
func inRange(a tool.Ask, n float64) bool {
	return (!a.Integer || n == math.Trunc(n)) && (a.Minimum == nil || n >= *a.Minimum) && (a.Maximum == nil || n <= *a.Maximum)
}

// numberPhrase describes a number ask's answers: "a whole number from 1 to 10".
func numberPhrase(a tool.Ask) string {
	s := "a number"
	if a.Integer {
		s = "a whole number"
	}
	switch {
	case a.Minimum != nil && a.Maximum != nil:
		s += fmt.Sprintf(" from %v to %v", *a.Minimum, *a.Maximum)
	case a.Minimum != nil:
		s += fmt.Sprintf(" of at least %v", *a.Minimum)
	case a.Maximum != nil:
		s += fmt.Sprintf(" of at most %v", *a.Maximum)
	}
	return s
}

func optionList(a tool.Ask) string {
	vals := make([]string, len(a.Options))
	for i, o := range a.Options {
		vals[i] = string(optionValue(o))
	}
	return strings.Join(vals, ", ")
}

func countPhrase(lo, hi int) string {
	switch {
	case lo == hi:
		return fmt.Sprintf("exactly %d", lo)
	case lo == 0:
		return fmt.Sprintf("at most %d", hi)
	default:
		return fmt.Sprintf("%d to %d", lo, hi)
	}
}

// CheckAnswer is how an answerer that sits between a person and the tool (the server's ask
// hub) refuses an answer before it counts: it returns the answer compacted when it has the
// shape the ask promises the tool, and otherwise an error saying what is wrong and what a
// right answer looks like. A permission answer may also be {"granted", "duration"}.
func CheckAnswer(a tool.Ask, answer json.RawMessage) (json.RawMessage, error) {
	if a.Type == tool.AskPermission {
		d, err := decisionFrom(bytes.TrimSpace(answer), tool.DurationOnce)
		if err != nil {
			return nil, fmt.Errorf(`permission ask %q: %w: %w; expected true, false or {"granted":true,"duration":"once|session|workspace"}`, a.Question, ErrInvalidAnswer, err)
		}
		switch d.Duration {
		case "", tool.DurationOnce, tool.DurationSession, tool.DurationWorkspace:
		default:
			return nil, fmt.Errorf("permission ask %q: %w: duration %q is not one of once, session, workspace", a.Question, ErrInvalidAnswer, d.Duration)
		}
		return json.Marshal(d)
	}
	if d := defaultOf(a); d != nil && a.Type == tool.AskText && bytes.Equal(bytes.TrimSpace(answer), []byte(`""`)) {
		answer = d
	}
	v, err := checkAnswer(a, answer)
	if err != nil {
		return nil, fmt.Errorf("%s ask %q: %w: %w; expected %s", a.Type, a.Question, ErrInvalidAnswer, err, expected(a))
	}
	return v, nil
}

// CheckAsk reports what is wrong with an ask a tool built, or nil.
func CheckAsk(a tool.Ask) error {
	if err := checkAsk(a); err != nil {
		return fmt.Errorf("%w: %w", ErrInvalidAsk, err)
	}
	return nil
}
