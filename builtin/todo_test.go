package builtin_test

import (
	"encoding/json"
	"testing"
)

func TestTodos(t *testing.T) {
	e := newEnv(t)
	e.golden("todo/read-empty", e.call("todoread", `{}`))
	e.golden("todo/write", e.call("todowrite", `{"todos":[
		{"content":"write tests","status":"in_progress"},
		{"content":"ship","status":"pending","priority":"low"},
		{"content":"read the issue","status":"completed","priority":"high"}]}`))
	// The list is the session's: a later call of the same session reads it back, high first.
	e.golden("todo/read", e.call("todoread", `{}`))
	e.golden("todo/bad-status", e.call("todowrite", `{"todos":[{"content":"x","status":"done"}]}`))
	e.golden("todo/no-content", e.call("todowrite", `{"todos":[{"content":"  ","status":"pending"}]}`))
	// Another session has a list of its own.
	other := newEnv(t)
	out := other.call("todoread", `{}`)
	var r struct{ Todos []any }
	if err := json.Unmarshal(out.Result.Result, &r); err != nil || len(r.Todos) != 0 {
		t.Fatalf("other session: %s %v", out.Result.Result, err)
	}
}

func TestQuestion(t *testing.T) {
	e := newEnv(t)
	e.asker.byType["form"] = `{"type":"form","answers":[{"question":"Which database?","answer":"pg"},{"question":"Proceed?","answer":true}]}`
	e.golden("question/answered", e.call("question", `{"title":"Setup","description":"Pick your stack","questions":[
		{"type":"single_select","question":"Which database?","options":[{"label":"Postgres","value":"pg"},{"label":"SQLite","value":"lite"}]},
		{"type":"confirm","question":"Proceed?","defaultValue":true}]}`))
	asked := e.asker.asked
	if len(asked) != 1 || asked[0].Type != "form" || asked[0].Question != "Setup" || len(asked[0].Questions) != 2 ||
		asked[0].Questions[0].Options[1].Label != "SQLite" || string(asked[0].Questions[1].DefaultValue) != "true" {
		t.Fatalf("ask: %+v", asked)
	}
	e.golden("question/duplicate-values", e.call("question", `{"title":"T","questions":[
		{"type":"multi_select","question":"Q","options":[{"label":"A","value":"a"},{"label":"B","value":"a"}]}]}`))
	e.golden("question/no-questions", e.call("question", `{"title":"T","questions":[]}`))
	if def := e.h.Tools(); len(def) == 0 {
		t.Fatal("no tools listed")
	}
}
