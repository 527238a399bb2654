package ask

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jean2/jean2/tool"
)

func writeAnswers(t *testing.T, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "answers.json")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

func loadAnswers(t *testing.T, content string) *Answers {
	t.Helper()
	f, err := LoadAnswers(writeAnswers(t, content))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

var (
	askPerm = tool.Ask{Type: tool.AskPermission, Question: "Read file outside workspace: /tmp/a?", Risk: "medium", Resource: "file"}
	askEnv  = tool.Ask{Type: tool.AskSingleSelect, Question: "Which environment?", Options: []tool.Option{
		{Label: "Production", Value: json.RawMessage(`"prod"`)}, {Label: "Staging", Value: json.RawMessage(`"staging"`)},
	}}
	askChecks = tool.Ask{Type: tool.AskMultiSelect, Question: "Which checks?", Max: intp(2), Options: []tool.Option{
		{Label: "lint"}, {Label: "test"}, {Label: "vet"},
	}}
	askBranch  = tool.Ask{Type: tool.AskText, Question: "Branch name?", DefaultValue: json.RawMessage(`"main"`)}
	askDelete  = tool.Ask{Type: tool.AskConfirm, Question: "Delete all temporary files?", DefaultValue: json.RawMessage(`false`)}
	askDeploy  = tool.Ask{Type: tool.AskForm, Question: "Deployment configuration", Questions: []tool.Ask{{Type: tool.AskText, Question: "Environment?"}, {Type: tool.AskConfirm, Question: "Run migrations?"}}}
	askCapable = tool.Ask{Type: tool.AskClientCapability, Target: "client", Capability: "clipboard.read"}
)

func TestAnswersArrayInOrder(t *testing.T) {
	f := loadAnswers(t, `[
		true,
		"staging",
		["lint", "vet"],
		"",
		null,
		["prod-eu", true],
		{"text": "copied"},
		{"granted": true, "duration": "session"}
	]`)
	ctx := context.Background()
	for i, c := range []struct {
		a    tool.Ask
		want string
	}{
		{askPerm, `true`},
		{askEnv, `"staging"`},
		{askChecks, `["lint","vet"]`},
		{askBranch, `"main"`}, // "" takes the default
		{askDelete, `false`},  // null takes the default
		{askDeploy, `{"type":"form","answers":[{"question":"Environment?","answer":"prod-eu"},{"question":"Run migrations?","answer":true}]}`},
		{askCapable, `{"text":"copied"}`},
	} {
		got, err := f.Ask(ctx, c.a)
		if err != nil || string(got) != c.want {
			t.Fatalf("answer %d (%s) = %s, %v; want %s", i+1, c.a.Type, got, err, c.want)
		}
	}
	d, err := f.AskPermission(ctx, askPerm)
	if err != nil || d != (Decision{Granted: true, Duration: tool.DurationSession}) {
		t.Fatalf("permission object = %+v, %v", d, err)
	}
	_, err = f.Ask(ctx, askEnv)
	if err == nil || !strings.Contains(err.Error(), "has only 8 answers") || !strings.Contains(err.Error(), `"Which environment?"`) || !strings.Contains(err.Error(), `"prod", "staging"`) {
		t.Fatalf("exhausted error = %v", err)
	}
}

func TestAnswersObjectByQuestion(t *testing.T) {
	f := loadAnswers(t, `{
		"Read file outside workspace: /tmp/a?": {"granted": true},
		"Which environment?": "prod",
		"Which checks?": [],
		"Branch name?": "release",
		"Delete all temporary files?": true,
		"Deployment configuration": {"type": "form", "answers": [
			{"question": "Run migrations?", "answer": false},
			{"question": "Environment?", "answer": "dev"}
		]},
		"clipboard.read": "hello",
		"Environment?": "qa",
		"Run migrations?": true
	}`)
	ctx := context.Background()
	d, err := f.AskPermission(ctx, askPerm)
	if err != nil || d != (Decision{Granted: true, Duration: tool.DurationOnce}) {
		t.Fatalf("permission = %+v, %v", d, err)
	}
	withDur := askPerm
	withDur.Duration = tool.DurationWorkspace
	if d, _ := f.AskPermission(ctx, withDur); d.Duration != tool.DurationWorkspace {
		t.Fatalf("a bare grant should last as the ask suggests, got %+v", d)
	}
	for _, c := range []struct {
		a    tool.Ask
		want string
	}{
		{askEnv, `"prod"`},
		{askChecks, `[]`},
		{askBranch, `"release"`},
		{askDelete, `true`},
		{askDeploy, `{"type":"form","answers":[{"question":"Environment?","answer":"dev"},{"question":"Run migrations?","answer":false}]}`},
		{askCapable, `"hello"`},
		// The object answers the same question every time it is asked.
		{askEnv, `"prod"`},
	} {
		got, err := f.Ask(ctx, c.a)
		if err != nil || string(got) != c.want {
			t.Fatalf("%s = %s, %v; want %s", c.a.Question, got, err, c.want)
		}
	}
	// A form with no key of its own is answered from its questions' keys.
	other := askDeploy
	other.Question = "Another deployment"
	got, err := f.Ask(ctx, other)
	if err != nil || string(got) != `{"type":"form","answers":[{"question":"Environment?","answer":"qa"},{"question":"Run migrations?","answer":true}]}` {
		t.Fatalf("assembled form = %s, %v", got, err)
	}
	_, err = f.Ask(ctx, tool.Ask{Type: tool.AskText, Question: "Unknown?"})
	if err == nil || !strings.Contains(err.Error(), `add "Unknown?": a string to its object`) {
		t.Fatalf("missing key error = %v", err)
	}
}

func TestAnswersRejectInvalid(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name   string
		file   string
		ask    tool.Ask
		expect []string
	}{
		{"select not an option", `["dev"]`, askEnv, []string{`answer 1`, `"Which environment?"`, `one of the option values "prod", "staging"`}},
		{"select number out of range", `[3]`, askEnv, []string{"not one of the option values"}},
		{"multi too many", `[["lint","test","vet"]]`, askChecks, []string{"chooses 3 options", "at most 2"}},
		{"multi twice", `[["lint","lint"]]`, askChecks, []string{"twice"}},
		{"multi unknown", `[["fmt"]]`, askChecks, []string{`"fmt", which is not an option`}},
		{"confirm string", `["maybe"]`, askDelete, []string{"true or false"}},
		{"text number", `[42]`, askBranch, []string{"a string"}},
		{"permission string", `["maybe"]`, askPerm, []string{`{"granted":true,"duration":"once|session|workspace"}`}},
		{"permission duration", `[{"granted":true,"duration":"forever"}]`, askPerm, []string{`"forever" is not one of once, session, workspace`}},
		{"form wrong count", `[["only one"]]`, askDeploy, []string{"2 questions but the array holds 1"}},
		{"form bad inner", `[["dev","maybe"]]`, askDeploy, []string{`question "Run migrations?"`, "true or false"}},
		{"form missing question", `[{"type":"form","answers":[{"question":"Environment?","answer":"dev"}]}]`, askDeploy, []string{`no answer to question "Run migrations?"`}},
		{"form extra question", `[[{"question":"Environment?","answer":"dev"},{"question":"Run migrations?","answer":true},{"question":"Extra?","answer":1}]]`, askDeploy, []string{`"Extra?", which the form does not ask`}},
	} {
		t.Run(c.name, func(t *testing.T) {
			f, err := ParseAnswers("answers.json", []byte(c.file))
			if err != nil {
				t.Fatal(err)
			}
			_, err = f.Ask(ctx, c.ask)
			if err == nil {
				t.Fatal("invalid answer accepted")
			}
			for _, e := range append(c.expect, "answers file answers.json", "the file should contain") {
				if !strings.Contains(err.Error(), e) {
					t.Errorf("error %q lacks %q", err, e)
				}
			}
		})
	}
}

func TestLoadAnswersBadFiles(t *testing.T) {
	if _, err := LoadAnswers(filepath.Join(t.TempDir(), "none.json")); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file error = %v", err)
	}
	for _, content := range []string{``, `"prod"`, `[1,`, `{"a":}`} {
		if _, err := LoadAnswers(writeAnswers(t, content)); err == nil || !strings.Contains(err.Error(), "answers file") {
			t.Fatalf("content %q: error = %v", content, err)
		}
	}
}

func TestAnswersRejectInvalidAsk(t *testing.T) {
	f := loadAnswers(t, `["x"]`)
	if _, err := f.Ask(context.Background(), tool.Ask{Type: "poll", Question: "?"}); err == nil || !strings.Contains(err.Error(), `"poll" is unknown`) {
		t.Fatalf("error = %v", err)
	}
}

func TestCheckAnswerForAHub(t *testing.T) {
	perm := tool.Ask{Type: tool.AskPermission, Question: "Write a.txt?", Risk: "low", Resource: "file"}
	got, err := CheckAnswer(perm, json.RawMessage(` true `))
	if err != nil || string(got) != `{"granted":true,"duration":"once"}` {
		t.Fatalf("permission true: %s, %v", got, err)
	}
	got, err = CheckAnswer(perm, json.RawMessage(`{"granted":true,"duration":"session"}`))
	if err != nil || string(got) != `{"granted":true,"duration":"session"}` {
		t.Fatalf("permission session: %s, %v", got, err)
	}
	if _, err := CheckAnswer(perm, json.RawMessage(`{"granted":true,"duration":"forever"}`)); !errors.Is(err, ErrInvalidAnswer) {
		t.Fatalf("duration forever accepted: %v", err)
	}
	pick := tool.Ask{Type: tool.AskSingleSelect, Question: "Which?", Options: []tool.Option{{Label: "A", Value: json.RawMessage(`"a"`)}}}
	if _, err := CheckAnswer(pick, json.RawMessage(`"b"`)); !errors.Is(err, ErrInvalidAnswer) || !strings.Contains(err.Error(), "expected") {
		t.Fatalf("option b accepted or unexplained: %v", err)
	}
	if got, err := CheckAnswer(pick, json.RawMessage(`"a"`)); err != nil || string(got) != `"a"` {
		t.Fatalf("option a: %s, %v", got, err)
	}
	if err := CheckAsk(tool.Ask{Type: "nonsense"}); !errors.Is(err, ErrInvalidAsk) {
		t.Fatalf("CheckAsk nonsense: %v", err)
	}
}

// An answers file accepts what the terminal accepts: yes/no (any case) for confirms and
// permissions, an option's label or its number for selects.
func TestAnswersAcceptWhatTheTerminalAccepts(t *testing.T) {
	ctx := context.Background()
	f, err := ParseAnswers("answers.json", []byte(`["Yes", "n", "staging", "Staging", 2, ["Lint", 3], ["dev", "y"], "no"]`))
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct {
		ask  tool.Ask
		want string
	}{
		{askDelete, "true"},
		{askDelete, "false"},
		{askEnv, `"staging"`},
		{askEnv, `"staging"`},
		{askEnv, `"staging"`},
		{askChecks, `["lint","vet"]`},
		{askDeploy, `{"type":"form","answers":[{"question":"Environment?","answer":"dev"},{"question":"Run migrations?","answer":true}]}`},
	} {
		got, err := f.Ask(ctx, c.ask)
		if err != nil {
			t.Fatalf("answer %d: %v", i+1, err)
		}
		if string(got) != c.want {
			t.Errorf("answer %d: got %s, want %s", i+1, got, c.want)
		}
	}
	d, err := f.AskPermission(ctx, askPerm)
	if err != nil || d.Granted {
		t.Fatalf("permission \"no\": %+v %v", d, err)
	}
}

// A number ask takes a JSON number within its bounds, whole when it asks for an integer;
// what is wrong says what a right answer looks like.
func TestCheckAnswerNumber(t *testing.T) {
	lo, hi := 1.0, 10.0
	age := tool.Ask{Type: tool.AskNumber, Question: "Age?", Integer: true, Minimum: &lo, Maximum: &hi}
	if err := CheckAsk(age); err != nil {
		t.Fatal(err)
	}
	if got, err := CheckAnswer(age, json.RawMessage(`7`)); err != nil || string(got) != `7` {
		t.Fatalf("7: %s %v", got, err)
	}
	for _, bad := range []string{`7.5`, `0`, `11`, `"7"`} {
		_, err := CheckAnswer(age, json.RawMessage(bad))
		if !errors.Is(err, ErrInvalidAnswer) || !strings.Contains(err.Error(), "a whole number from 1 to 10") {
			t.Errorf("%s: %v", bad, err)
		}
	}
	if err := CheckAsk(tool.Ask{Type: tool.AskNumber, Question: "Age?", Integer: true, DefaultValue: json.RawMessage(`2.5`)}); err == nil {
		t.Error("a number ask whose default is not whole was taken")
	}
}
