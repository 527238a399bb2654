package server

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/hub"
	"github.com/jean2/jean2/provider/providertest"
	"github.com/jean2/jean2/skills"
	"github.com/jean2/jean2/store"
)

// writeFiles writes files below dir.
func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for rel, text := range files {
		p := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// openAIMessages are the messages of an OpenAI chat request: the system prompt first.
type openAIMessages struct {
	Messages []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	} `json:"messages"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

// systemOf is the system prompt of a request the fake provider received.
func systemOf(t testing.TB, r providertest.Request) string {
	t.Helper()
	var m openAIMessages
	if err := r.Decode(&m); err != nil {
		t.Fatal(err)
	}
	for _, msg := range m.Messages {
		if msg.Role == "system" {
			var s string
			if json.Unmarshal(msg.Content, &s) == nil {
				return s
			}
			return string(msg.Content)
		}
	}
	return ""
}

// lastToolResult is the content of the last tool message of a request: what the model was
// told of its last call.
func lastToolResult(t testing.TB, r providertest.Request) string {
	t.Helper()
	var m openAIMessages
	if err := r.Decode(&m); err != nil {
		t.Fatal(err)
	}
	for i := len(m.Messages) - 1; i >= 0; i-- {
		if m.Messages[i].Role == "tool" {
			var s string
			if json.Unmarshal(m.Messages[i].Content, &s) == nil {
				return s
			}
			return string(m.Messages[i].Content)
		}
	}
	return ""
}

// runTurn starts a turn and waits for its end over a socket; it returns the reason.
func (f *fixture) runTurn(sesID, text string) string {
	f.t.Helper()
	var now sessionView
	f.call("GET", "/api/sessions/"+sesID, nil, 200, &now)
	sock := f.dial(fmt.Sprintf("/api/sessions/%s/ws?after=%d", sesID, now.LastSeq), nil)
	defer sock.close()
	f.call("POST", "/api/sessions/"+sesID+"/turns", map[string]any{"text": text}, 202, nil)
	fin, _ := sock.until("turn.finished", 60*time.Second)
	var p struct{ Reason, Error string }
	mustJSON(f.t, fin.Payload, &p)
	return p.Reason + p.Error
}

const pdfSkill = "---\nname: pdf-forms\ndescription: Fill PDF forms. Use when the person mentions a PDF form.\nlicense: MIT\nallowed-tools: Read\n---\n\n# PDF forms\n\nBODY-MARKER-7731: run the fill script, then check every field.\n"

// Skills: only names and descriptions are in the request; the skill tool loads the body
// and a file; a broken skill is listed with its error in the API and does not hide the
// others; a SKILL.md saved between turns (and a broken one fixed) is offered at the next
// turn without a restart.
func TestSkillsOfferedLoadedAndLive(t *testing.T) {
	f := newFixture(t)
	homeSkills := filepath.Join(f.home, "skills")
	wsSkills := filepath.Join(f.ws, ".jean2", "skills")
	writeFiles(t, homeSkills, map[string]string{"pdf-forms/SKILL.md": pdfSkill,
		"pdf-forms/reference/fields.md": "FILE-MARKER-5512: the fields are name and date.\n"})
	writeFiles(t, wsSkills, map[string]string{
		"release/SKILL.md": "---\ndescription: Cut a release of this project.\n---\nTag, then push.\n",
		"broken/SKILL.md":  "---\nname: broken\ndescription: [unclosed\n---\nbody\n",
	})
	f.start()
	ws, ses := f.session()
	f.fake.Push(
		providertest.OpenAIToolCall("test-model", "call_1", "skill", `{"name":"pdf-forms"}`),
		providertest.OpenAIToolCall("test-model", "call_2", "skill", `{"name":"pdf-forms","file":"reference/fields.md"}`),
		providertest.OpenAIText("test-model", "Filled."),
	)
	if r := f.runTurn(ses.ID, "fill the PDF form"); r != "done" {
		t.Fatalf("turn ended %s", r)
	}
	reqs := f.fake.Requests()
	if len(reqs) != 3 {
		t.Fatalf("%d requests, want 3", len(reqs))
	}
	sys := systemOf(t, reqs[0])
	for _, want := range []string{"- pdf-forms: Fill PDF forms. Use when the person mentions a PDF form.", "- release: Cut a release of this project."} {
		if !strings.Contains(sys, want) {
			t.Errorf("the system prompt lacks %q:\n%s", want, sys)
		}
	}
	if strings.Contains(sys, "BODY-MARKER") || strings.Contains(sys, "broken") {
		t.Errorf("the system prompt holds a skill's body or the broken skill:\n%s", sys)
	}
	if got := lastToolResult(t, reqs[1]); !strings.Contains(got, "BODY-MARKER-7731") || !strings.Contains(got, "- reference/fields.md") || strings.Contains(got, "allowed-tools") {
		t.Errorf("the skill tool gave the model:\n%s", got)
	}
	if got := lastToolResult(t, reqs[2]); !strings.Contains(got, "FILE-MARKER-5512") {
		t.Errorf("the skill's file reached the model as:\n%s", got)
	}

	// The API lists every skill, the broken one with its error.
	var listed skillsView
	f.call("GET", "/api/workspaces/"+ws.ID+"/skills", nil, 200, &listed)
	byName := map[string]skills.Skill{}
	for _, sk := range listed.Skills {
		byName[sk.Name] = sk
	}
	if listed.Broken != 1 || !strings.Contains(byName["broken"].Error, "YAML") || byName["pdf-forms"].Scope != "home" || byName["release"].Scope != "workspace" || byName["release"].Error != "" {
		t.Fatalf("skills listed: %+v", listed)
	}
	var homeOnly skillsView
	f.call("GET", "/api/skills", nil, 200, &homeOnly)
	if len(homeOnly.Skills) != 1 || homeOnly.Skills[0].Name != "pdf-forms" {
		t.Fatalf("GET /api/skills: %+v", homeOnly)
	}

	// The broken skill was reported on the server's log, once.
	brokenEvents := func() []string {
		var log struct{ Events []store.Event }
		f.call("GET", "/api/events?after=0", nil, 200, &log)
		var out []string
		for _, ev := range log.Events {
			if ev.Type == "skills.broken" {
				out = append(out, string(ev.Payload))
			}
		}
		return out
	}
	if evs := brokenEvents(); len(evs) != 1 || !strings.Contains(evs[0], `"name":"broken"`) || !strings.Contains(evs[0], "YAML") {
		t.Fatalf("skills.broken events: %q", evs)
	}

	// Saved and fixed while the server runs: offered at the next turn.
	writeFiles(t, wsSkills, map[string]string{
		"changelog/SKILL.md": "---\nname: changelog\ndescription: Write the changelog entry.\n---\nOne line per change.\n",
		"broken/SKILL.md":    "---\nname: broken\ndescription: Fixed now.\n---\nbody\n",
	})
	f.fake.Push(providertest.OpenAIText("test-model", "ok"))
	if r := f.runTurn(ses.ID, "again"); r != "done" {
		t.Fatalf("second turn ended %s", r)
	}
	if evs := brokenEvents(); len(evs) != 2 || !strings.Contains(evs[1], `"skills":[]`) {
		t.Fatalf("skills.broken events after the fix: %q", evs)
	}
	sys = systemOf(t, f.fake.Requests()[3])
	for _, want := range []string{"- changelog: Write the changelog entry.", "- broken: Fixed now.", "- pdf-forms:"} {
		if !strings.Contains(sys, want) {
			t.Errorf("the next turn's system prompt lacks %q:\n%s", want, sys)
		}
	}
}

// skill_manage writes a skill only after the person allowed it, through the API's asks; a
// refused write leaves nothing; the skill written is offered at the next turn.
func TestSkillManageAsksAndCreates(t *testing.T) {
	f := newFixture(t).start()
	_, ses := f.session()
	create := `{"action":"create","name":"lint-fix","description":"Fix lint errors the project's way.","body":"Run the linter, fix, run again."}`
	f.fake.Push(
		providertest.OpenAIToolCall("test-model", "call_1", "skill_manage", create),
		providertest.OpenAIText("test-model", "Refused, fine."),
		providertest.OpenAIToolCall("test-model", "call_2", "skill_manage", create),
		providertest.OpenAIText("test-model", "Saved."),
		providertest.OpenAIText("test-model", "Using it."),
	)
	answer := func(grant bool) {
		var now sessionView
		f.call("GET", "/api/sessions/"+ses.ID, nil, 200, &now)
		sock := f.dial(fmt.Sprintf("/api/sessions/%s/ws?after=%d", ses.ID, now.LastSeq), nil)
		defer sock.close()
		f.call("POST", "/api/sessions/"+ses.ID+"/turns", map[string]any{"text": "keep this as a skill"}, 202, nil)
		pending, _ := sock.until("ask.pending", 60*time.Second)
		var p hub.AskPendingPayload
		mustJSON(t, pending.Payload, &p)
		want := filepath.Join(f.ws, ".jean2", "skills", "lint-fix", "SKILL.md")
		if p.Ask.Tool != "skill_manage" || len(p.Ask.Ask.Paths) != 1 || p.Ask.Ask.Paths[0] != want {
			t.Fatalf("ask = %s", pending.Payload)
		}
		f.call("POST", "/api/sessions/"+ses.ID+"/asks/"+p.Ask.ID, map[string]any{"answer": map[string]any{"granted": grant, "duration": "once"}}, 200, nil)
		sock.until("turn.finished", 60*time.Second)
	}
	answer(false)
	if got := lastToolResult(t, f.fake.Requests()[1]); !strings.Contains(got, "USER_REJECTION") {
		t.Errorf("a refused write told the model: %s", got)
	}
	if _, err := os.Stat(filepath.Join(f.ws, ".jean2", "skills", "lint-fix")); !os.IsNotExist(err) {
		t.Fatalf("a refused skill was written: %v", err)
	}
	answer(true)
	data, err := os.ReadFile(filepath.Join(f.ws, ".jean2", "skills", "lint-fix", "SKILL.md"))
	if err != nil || !strings.Contains(string(data), "Run the linter") {
		t.Fatalf("SKILL.md = %q, %v", data, err)
	}
	if r := f.runTurn(ses.ID, "lint"); r != "done" {
		t.Fatalf("turn ended %s", r)
	}
	reqs := f.fake.Requests()
	if sys := systemOf(t, reqs[len(reqs)-1]); !strings.Contains(sys, "- lint-fix: Fix lint errors the project's way.") {
		t.Errorf("the created skill is not offered:\n%s", sys)
	}
}

// Memory: the files join the instructions; the memory tool adds, replaces and removes
// entries, keeping what the person wrote by hand; with the person's config.json saying
// "memory": {"autoApprove": true} it never asks.
func TestMemoryKeptAcrossSessions(t *testing.T) {
	f := newFixture(t)
	hand := "# Written by hand\nThe person likes tabs.\n"
	writeFiles(t, f.home, map[string]string{"MEMORY.md": hand, "USER.md": "Name: Ada.\n",
		"config.json": `{"memory": {"autoApprove": true}}`})
	f.start()
	_, ses := f.session()
	f.fake.Push(
		providertest.OpenAIToolCall("test-model", "call_1", "memory", `{"action":"add","content":"The project builds with make."}`),
		providertest.OpenAIToolCall("test-model", "call_2", "memory", `{"action":"replace","old":"builds with make","content":"builds with go build"}`),
		providertest.OpenAIText("test-model", "Noted."),
	)
	if r := f.runTurn(ses.ID, "remember how to build"); r != "done" {
		t.Fatalf("turn ended %s", r)
	}
	first := systemOf(t, f.fake.Requests()[0])
	if !strings.Contains(first, "The person likes tabs.") || !strings.Contains(first, "Name: Ada.") {
		t.Fatalf("the memory files are not in the instructions:\n%s", first)
	}
	data, _ := os.ReadFile(filepath.Join(f.home, "MEMORY.md"))
	if want := hand + "§\nThe project builds with go build.\n"; string(data) != want {
		t.Fatalf("MEMORY.md = %q, want %q", data, want)
	}
	// Another session sees it; removing the entry gives back the hand-written file.
	_, other := f.session()
	f.fake.Push(
		providertest.OpenAIToolCall("test-model", "call_3", "memory", `{"action":"remove","old":"The project builds with go build."}`),
		providertest.OpenAIText("test-model", "Forgotten."),
	)
	if r := f.runTurn(other.ID, "forget the build"); r != "done" {
		t.Fatalf("turn ended %s", r)
	}
	reqs := f.fake.Requests()
	if sys := systemOf(t, reqs[3]); !strings.Contains(sys, "builds with go build") {
		t.Fatalf("the other session's instructions lack the entry:\n%s", sys)
	}
	data, _ = os.ReadFile(filepath.Join(f.home, "MEMORY.md"))
	if string(data) != hand {
		t.Fatalf("after remove MEMORY.md = %q, want the hand-written %q", data, hand)
	}
}

// session_search finds the workspace's past sessions by their messages and reads one
// message; another workspace's sessions are never found nor read.
func TestSessionSearchToolStaysInWorkspace(t *testing.T) {
	f := newFixture(t).start()
	_, past := f.session()
	f.fake.Push(providertest.OpenAIText("test-model", "The flux capacitor bug was in timing.go."))
	if r := f.runTurn(past.ID, "where was the flux capacitor bug?"); r != "done" {
		t.Fatalf("turn ended %s", r)
	}
	otherDir := filepath.Join(f.root, "other")
	if err := os.MkdirAll(otherDir, 0o755); err != nil {
		t.Fatal(err)
	}
	var otherWS struct{ ID string }
	f.call("POST", "/api/workspaces", map[string]any{"path": otherDir}, 201, &otherWS)
	var otherSes sessionView
	f.call("POST", "/api/workspaces/"+otherWS.ID+"/sessions", map[string]any{"title": "elsewhere"}, 201, &otherSes)
	f.fake.Push(providertest.OpenAIText("test-model", "SECRET-ELSEWHERE flux capacitor notes."))
	if r := f.runTurn(otherSes.ID, "flux capacitor elsewhere"); r != "done" {
		t.Fatalf("turn ended %s", r)
	}
	var otherMsgs struct {
		Messages []struct{ ID string }
	}
	f.call("GET", "/api/sessions/"+otherSes.ID+"/messages", nil, 200, &otherMsgs)

	_, now := f.session()
	f.fake.Push(
		providertest.OpenAIToolCall("test-model", "call_1", "session_search", `{"query":"flux capacitor"}`),
		providertest.OpenAIToolCall("test-model", "call_2", "session_search", `{"messageId":"`+otherMsgs.Messages[1].ID+`"}`),
		providertest.OpenAIText("test-model", "It was timing.go."),
	)
	if r := f.runTurn(now.ID, "what did we find about the flux capacitor?"); r != "done" {
		t.Fatalf("turn ended %s", r)
	}
	reqs := f.fake.Requests()
	found := lastToolResult(t, reqs[len(reqs)-2])
	if !strings.Contains(found, past.ID) || !strings.Contains(found, "**flux**") || strings.Contains(found, otherSes.ID) || strings.Contains(found, "SECRET-ELSEWHERE") {
		t.Fatalf("session_search found:\n%s", found)
	}
	read := lastToolResult(t, reqs[len(reqs)-1])
	if strings.Contains(read, "SECRET-ELSEWHERE") || !strings.Contains(read, "there is no message") {
		t.Fatalf("reading another workspace's message gave:\n%s", read)
	}
}

// With 50 skills installed, each with a 20 KiB body, a request carries their names and
// descriptions only: measured from the wire, against the same request with no skills.
func TestSkillsPromptBytes(t *testing.T) {
	f := newFixture(t)
	body := strings.Repeat("Step: do the thing carefully and check it. ", 500) // ~22 KB
	files := map[string]string{}
	for i := range 50 {
		name := fmt.Sprintf("skill-%02d", i)
		files[name+"/SKILL.md"] = fmt.Sprintf("---\nname: %s\ndescription: Handle task %02d of the project, what it does and when to use it, in about one hundred characters.\n---\n%s\n", name, i, body)
	}
	f.start()
	_, ses := f.session()
	f.fake.Push(providertest.OpenAIText("test-model", "ok"), providertest.OpenAIText("test-model", "ok"))
	if r := f.runTurn(ses.ID, "hi"); r != "done" {
		t.Fatalf("turn ended %s", r)
	}
	writeFiles(t, filepath.Join(f.home, "skills"), files)
	if r := f.runTurn(ses.ID, "hi"); r != "done" {
		t.Fatalf("turn ended %s", r)
	}
	reqs := f.fake.Requests()
	without, with := systemOf(t, reqs[0]), systemOf(t, reqs[1])
	added := len(with) - len(without)
	perSkill := added / 50
	t.Logf("system prompt: %d bytes without skills, %d with 50 (+%d, %d per skill); request body %d → %d bytes",
		len(without), len(with), added, perSkill, len(reqs[0].Body), len(reqs[1].Body))
	if strings.Contains(with, "Step: do the thing") || strings.Count(with, "- skill-") != 50 || perSkill > 200 {
		t.Fatalf("50 skills added %d bytes to the system prompt", added)
	}
}
