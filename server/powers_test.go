package server

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/hub"
	"github.com/jean2/jean2/provider/providertest"
	"github.com/jean2/jean2/undo"
)

// turnAnswering runs a turn, answering each ask it makes with grant (once); it returns the
// turn's user message and the tools whose asks came, in order.
func (f *fixture) turnAnswering(sesID, text string, grant bool) (userMessageID string, asked []string) {
	f.t.Helper()
	var now sessionView
	f.call("GET", "/api/sessions/"+sesID, nil, 200, &now)
	sock := f.dial(fmt.Sprintf("/api/sessions/%s/ws?after=%d", sesID, now.LastSeq), nil)
	defer sock.close()
	var started struct {
		Turn struct{ ID, UserMessageID string }
	}
	f.call("POST", "/api/sessions/"+sesID+"/turns", map[string]any{"text": text}, 202, &started)
	deadline := time.Now().Add(90 * time.Second)
	for {
		var ev event
		mustJSON(f.t, sock.next(time.Until(deadline)), &ev)
		switch ev.Type {
		case "ask.pending":
			var p hub.AskPendingPayload
			mustJSON(f.t, ev.Payload, &p)
			asked = append(asked, p.Ask.Tool+" "+strings.Join(p.Ask.Ask.Paths, ","))
			f.call("POST", "/api/sessions/"+sesID+"/asks/"+p.Ask.ID, map[string]any{"answer": map[string]any{"granted": grant, "duration": "once"}}, 200, nil)
		case "turn.finished":
			var fin struct{ Reason, Error string }
			mustJSON(f.t, ev.Payload, &fin)
			if fin.Reason != "done" {
				f.t.Fatalf("the turn %q ended %s %s", text, fin.Reason, fin.Error)
			}
			return started.Turn.UserMessageID, asked
		}
	}
}

// restoreTo restores a session to a message over the API and returns the report.
func (f *fixture) restoreTo(sesID, messageID string) undo.Report {
	f.t.Helper()
	var done struct{ Report undo.Report }
	f.call("POST", "/api/sessions/"+sesID+"/restore", map[string]any{"messageId": messageID}, 200, &done)
	return done.Report
}

func readOr(path, missing string) string {
	b, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return missing
	}
	return string(b)
}

// skill_manage's writes are on the turn's ledger: a turn that creates a skill in jean2's
// home, edits a workspace skill and adds a file to it is undone by Restore of that turn —
// the new skill's folder is gone, the edited SKILL.md is back as it was, the added file is
// gone — and the turn's "Changed N files" counts them.
func TestSkillManageWritesAreRestored(t *testing.T) {
	f := newFixture(t)
	wsSkill := filepath.Join(f.ws, ".jean2", "skills", "release", "SKILL.md")
	original := "---\nname: release\ndescription: Cut a release.\n---\nTag, then push.\n"
	writeFiles(t, filepath.Dir(wsSkill), map[string]string{"SKILL.md": original})
	f.start()
	_, ses := f.session()
	f.fake.Push(
		providertest.OpenAIToolCall("test-model", "call_1", "skill_manage", `{"action":"create","name":"lint-fix","scope":"home","description":"Fix lint errors.","body":"Run the linter."}`),
		providertest.OpenAIToolCall("test-model", "call_2", "skill_manage", `{"action":"edit","name":"release","oldString":"Tag, then push.","newString":"Tag, sign, then push."}`),
		providertest.OpenAIToolCall("test-model", "call_3", "skill_manage", `{"action":"write_file","name":"release","path":"notes/checklist.md","content":"- tag\n"}`),
		providertest.OpenAIText("test-model", "Saved."),
	)
	msgID, asked := f.turnAnswering(ses.ID, "keep these skills", true)
	if len(asked) != 3 {
		t.Fatalf("asks: %q", asked)
	}
	created := filepath.Join(f.home, "skills", "lint-fix")
	if got := readOr(wsSkill, "(gone)"); !strings.Contains(got, "Tag, sign, then push.") || readOr(filepath.Join(created, "SKILL.md"), "") == "" {
		t.Fatalf("after the turn: release %q; lint-fix %q", got, readOr(filepath.Join(created, "SKILL.md"), "(gone)"))
	}

	report := f.restoreTo(ses.ID, msgID)
	t.Logf("restore report: %+v", report)
	if !report.Applied {
		t.Fatalf("restore not applied: %+v", report)
	}
	if _, err := os.Stat(created); !os.IsNotExist(err) {
		t.Errorf("the created skill survived the restore: %v", err)
	}
	if got := readOr(wsSkill, "(gone)"); got != original {
		t.Errorf("the edited SKILL.md after restore = %q, want %q", got, original)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(wsSkill), "notes")); !os.IsNotExist(err) {
		t.Errorf("the added file's folder survived the restore: %v", err)
	}
}

// The memory tool asks the person before it changes a memory file, as a write outside the
// workspace: refused, the file is unchanged and the model reads USER_REJECTION; allowed,
// the change is made and is on the turn's ledger, so Restore of the turn puts both files
// back as they were (one made by the turn is removed).
func TestMemoryAsksAndIsRestored(t *testing.T) {
	f := newFixture(t)
	hand := "# Written by hand\nThe person likes tabs.\n"
	writeFiles(t, f.home, map[string]string{"MEMORY.md": hand})
	f.start()
	_, ses := f.session()
	mem, user := filepath.Join(f.home, "MEMORY.md"), filepath.Join(f.home, "USER.md")
	f.fake.Push(
		providertest.OpenAIToolCall("test-model", "call_1", "memory", `{"action":"add","content":"Refused fact."}`),
		providertest.OpenAIText("test-model", "Not kept."),
	)
	if _, asked := f.turnAnswering(ses.ID, "remember this", false); len(asked) != 1 || asked[0] != "memory "+mem {
		t.Fatalf("asks of the refused turn: %q", asked)
	}
	if got := readOr(mem, "(gone)"); got != hand {
		t.Fatalf("a refused change was written: %q", got)
	}
	if got := lastToolResult(t, f.fake.Requests()[1]); !strings.Contains(got, "USER_REJECTION") {
		t.Fatalf("the model was told: %s", got)
	}

	f.fake.Push(
		providertest.OpenAIToolCall("test-model", "call_2", "memory", `{"action":"replace","old":"likes tabs","content":"likes spaces"}`),
		providertest.OpenAIToolCall("test-model", "call_3", "memory", `{"action":"add","target":"user","content":"Name: Ada."}`),
		providertest.OpenAIText("test-model", "Kept."),
	)
	msgID, asked := f.turnAnswering(ses.ID, "remember these", true)
	if len(asked) != 2 || asked[1] != "memory "+user {
		t.Fatalf("asks of the allowed turn: %q", asked)
	}
	if got := readOr(mem, ""); !strings.Contains(got, "likes spaces") || readOr(user, "") != "Name: Ada.\n" {
		t.Fatalf("after the allowed turn: MEMORY.md %q, USER.md %q", got, readOr(user, "(gone)"))
	}
	report := f.restoreTo(ses.ID, msgID)
	if !report.Applied {
		t.Fatalf("restore not applied: %+v", report)
	}
	if got := readOr(mem, "(gone)"); got != hand {
		t.Errorf("MEMORY.md after restore = %q, want %q", got, hand)
	}
	if got := readOr(user, "(gone)"); got != "(gone)" {
		t.Errorf("USER.md, made by the turn, after restore = %q", got)
	}
}
