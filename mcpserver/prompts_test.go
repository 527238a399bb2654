package mcpserver_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/jean2/jean2/mcpserver"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func write(t *testing.T, path, body string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func listPrompts(t *testing.T, cs *mcp.ClientSession) map[string]*mcp.Prompt {
	t.Helper()
	out := map[string]*mcp.Prompt{}
	for p, err := range cs.Prompts(context.Background(), nil) {
		if err != nil {
			t.Fatalf("prompts/list: %v", err)
		}
		out[p.Name] = p
	}
	return out
}

func promptText(t *testing.T, cs *mcp.ClientSession, name string, args map[string]string) (string, error) {
	t.Helper()
	res, err := cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: name, Arguments: args})
	if err != nil {
		return "", err
	}
	if len(res.Messages) != 1 || res.Messages[0].Role != "user" {
		t.Fatalf("prompts/get %s: want one user message, got %s", name, toJSON(res))
	}
	return res.Messages[0].Content.(*mcp.TextContent).Text, nil
}

// jean2's skills are prompts, on either revision: those a person may invoke are listed with
// their arguments, a broken one and one hidden from people are left out, a workspace's
// replaces the home's, and prompts/get substitutes the arguments into the body.
func TestSkillsArePrompts(t *testing.T) {
	r := newRig(t)
	home := filepath.Join(r.h.Layout().Home, "skills")
	write(t, filepath.Join(home, "review", "SKILL.md"), "---\ndescription: Review a file.\narguments:\n  - name: file\n    description: the file to review\n    required: true\n  - name: format\n    values: [pdf, html, plain]\n---\nReview $file, answer as $format ($ARGUMENTS).\n")
	write(t, filepath.Join(home, "fix-issue", "SKILL.md"), "---\ndescription: Fix an issue.\nargument-hint: \"[issue-number] [priority]\"\ndisable-model-invocation: true\n---\nFix issue $0 at priority $1.\n")
	write(t, filepath.Join(home, "plain", "SKILL.md"), "---\ndescription: The home's.\n---\nHome body.\n")
	write(t, filepath.Join(r.ws, ".jean2", "skills", "plain", "SKILL.md"), "---\ndescription: The workspace's.\n---\nWorkspace body.\n")
	write(t, filepath.Join(home, "broken", "SKILL.md"), "---\ndescription: [unclosed\n---\n")
	write(t, filepath.Join(home, "background", "SKILL.md"), "---\ndescription: For the model.\nuser-invocable: false\n---\nx\n")

	for _, version := range []string{newest, classic} {
		cs := r.connect(version, nil)
		got := listPrompts(t, cs)
		var names []string
		for n := range got {
			names = append(names, n)
		}
		if len(got) != 3 || got["review"] == nil || got["fix-issue"] == nil || got["plain"] == nil {
			t.Fatalf("%s: prompts %v, want fix-issue, plain, review", version, names)
		}
		want := []*mcp.PromptArgument{{Name: "file", Description: "the file to review", Required: true}, {Name: "format"}}
		if !reflect.DeepEqual(got["review"].Arguments, want) || got["review"].Description != "Review a file." {
			t.Errorf("%s: review listed as %s", version, toJSON(got["review"]))
		}
		if a := got["fix-issue"].Arguments; len(a) != 1 || a[0].Name != "arguments" || !strings.Contains(a[0].Description, "[issue-number] [priority]") {
			t.Errorf("%s: fix-issue listed as %s", version, toJSON(got["fix-issue"]))
		}
		if got["plain"].Description != "The workspace's." || len(got["plain"].Arguments) != 0 {
			t.Errorf("%s: plain listed as %s", version, toJSON(got["plain"]))
		}

		text, err := promptText(t, cs, "review", map[string]string{"file": "main.go", "format": "plain text"})
		if want := `Review main.go, answer as plain text (main.go "plain text").`; err != nil || text != want {
			t.Errorf("%s: review = %q, %v; want %q", version, text, err, want)
		}
		if text, err := promptText(t, cs, "fix-issue", map[string]string{"arguments": `42 "very high"`}); err != nil || text != "Fix issue 42 at priority very high." {
			t.Errorf("%s: fix-issue = %q, %v", version, text, err)
		}
		if text, err := promptText(t, cs, "plain", nil); err != nil || text != "Workspace body." {
			t.Errorf("%s: plain = %q, %v", version, text, err)
		}
		for name, args := range map[string]map[string]string{"review": {"format": "pdf"}, "broken": nil, "background": nil, "nothing": nil} {
			if text, err := promptText(t, cs, name, args); err == nil {
				t.Errorf("%s: prompts/get %s %v answered %q; want an error", version, name, args, text)
			}
		}
	}
}

// The prompt list follows the skills folders live: a skill saved, changed or removed is
// announced with notifications/prompts/list_changed to a client that listens.
func TestPromptsFollowTheSkills(t *testing.T) {
	r := newRig(t, func(r *rig) { r.opts.PromptPoll = 50 * time.Millisecond })
	changed := make(chan struct{}, 16)
	cs := r.connect(classic, &mcp.ClientOptions{PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) {
		changed <- struct{}{}
	}})
	if got := listPrompts(t, cs); len(got) != 0 {
		t.Fatalf("prompts before any skill: %s", toJSON(got))
	}
	skill := filepath.Join(r.h.Layout().Home, "skills", "deploy", "SKILL.md")
	wait := func(what string, check func(map[string]*mcp.Prompt) bool) {
		t.Helper()
		select {
		case <-changed:
		case <-time.After(10 * time.Second):
			t.Fatalf("no notifications/prompts/list_changed after %s", what)
		}
		if got := listPrompts(t, cs); !check(got) {
			t.Fatalf("after %s: %s", what, toJSON(got))
		}
	}
	write(t, skill, "---\ndescription: Deploy.\n---\nDeploy it.\n")
	wait("a skill was saved", func(p map[string]*mcp.Prompt) bool { return p["deploy"] != nil })
	write(t, skill, "---\ndescription: Deploy now.\nargument-hint: \"[env]\"\n---\nDeploy to $0.\n")
	wait("a skill was changed", func(p map[string]*mcp.Prompt) bool {
		return p["deploy"] != nil && p["deploy"].Description == "Deploy now." && len(p["deploy"].Arguments) == 1
	})
	if err := os.RemoveAll(filepath.Dir(skill)); err != nil {
		t.Fatal(err)
	}
	wait("a skill was removed", func(p map[string]*mcp.Prompt) bool { return len(p) == 0 })
}

func complete(t *testing.T, cs *mcp.ClientSession, ref *mcp.CompleteReference, arg, value string) (*mcp.CompleteResult, error) {
	t.Helper()
	return cs.Complete(context.Background(), &mcp.CompleteParams{Ref: ref, Argument: mcp.CompleteParamsArgument{Name: arg, Value: value}})
}

// completion/complete offers a prompt argument's declared values, and workspace paths for a
// path-like argument and for the workspace template's {+path}: listed as ctx.fs lists them,
// sensitive files and climbing out left out, at most 100 values.
func TestCompletion(t *testing.T) {
	r := newRig(t)
	write(t, filepath.Join(r.h.Layout().Home, "skills", "review", "SKILL.md"),
		"---\ndescription: Review.\narguments:\n  - name: file\n  - name: format\n    values: [pdf, html, plain]\n  - name: note\n---\n$file\n")
	for path, body := range map[string]string{"alpha.txt": "a", "also.md": "a", "sub/beta.go": "b", ".env": "K=v", "id_rsa": "key", "other.txt": "o"} {
		write(t, filepath.Join(r.ws, path), body)
	}
	for i := range 120 {
		write(t, filepath.Join(r.ws, "many", fmt.Sprintf("f%03d", i)), "x")
	}
	prompt := &mcp.CompleteReference{Type: "ref/prompt", Name: "review"}
	tmpl := &mcp.CompleteReference{Type: "ref/resource", URI: mcpserver.WorkspaceScheme + "{+path}"}
	for _, version := range []string{newest, classic} {
		cs := r.connect(version, nil)
		cases := []struct {
			ref        *mcp.CompleteReference
			arg, value string
			want       []string
		}{
			{prompt, "format", "P", []string{"pdf", "plain"}},
			{prompt, "note", "", []string{}},
			{prompt, "file", "a", []string{"alpha.txt", "also.md"}},
			{tmpl, "path", "", []string{"alpha.txt", "also.md", "many/", "other.txt", "sub/"}},
			{tmpl, "path", "sub/b", []string{"sub/beta.go"}},
			{tmpl, "path", ".e", []string{}},
			{tmpl, "path", "id", []string{}},
			{tmpl, "path", "../", []string{}},
			{tmpl, "path", "/etc/", []string{}},
		}
		for _, c := range cases {
			res, err := complete(t, cs, c.ref, c.arg, c.value)
			if err != nil || !reflect.DeepEqual(res.Completion.Values, c.want) {
				t.Errorf("%s: complete %s %s=%q = %s, %v; want %q", version, c.ref.Type, c.arg, c.value, toJSON(res), err, c.want)
			}
		}
		res, err := complete(t, cs, tmpl, "path", "many/f")
		if err != nil || len(res.Completion.Values) != 100 || !res.Completion.HasMore || res.Completion.Values[0] != "many/f000" {
			t.Errorf("%s: 120 files completed as %d values, hasMore %v, %v", version, len(res.Completion.Values), res.Completion.HasMore, err)
		}
		if _, err := complete(t, cs, &mcp.CompleteReference{Type: "ref/prompt", Name: "nothing"}, "x", ""); err == nil {
			t.Errorf("%s: completion of a prompt that does not exist answered", version)
		}
	}
}
