package e2e_test

import (
	"os"
	"path/filepath"
	"testing"
)

// writeSkillFile writes a SKILL.md below a skills folder.
func writeSkillFile(t *testing.T, skillsDir, name, text string) {
	t.Helper()
	p := filepath.Join(skillsDir, name, "SKILL.md")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestToolsPageSkills: the tools page lists the workspace's skills ($JEAN2_HOME's and its
// own), a broken one with why it cannot be used, and follows a skill that breaks while the
// page is open (skills.broken on the server's log after the next turn).
func TestToolsPageSkills(t *testing.T) {
	f := newFixture(t)
	writeSkillFile(t, filepath.Join(f.home, "skills"), "pdf-forms", "---\nname: pdf-forms\ndescription: Fill PDF forms.\n---\nBody.\n")
	wsSkills := filepath.Join(f.ws, ".jean2", "skills")
	writeSkillFile(t, wsSkills, "broken", "---\nname: broken\ndescription: [oops\n---\n")
	ses := f.session("skills")
	f.open("#/tools")
	f.waitText(`.skill[data-skill="pdf-forms"][data-scope="home"]`, "Fill PDF forms.")
	f.waitText(`.skill-broken[data-skill="broken"]`, "Cannot be used")
	f.waitText(`.skills-section`, filepath.Join(f.home, "skills"))

	writeSkillFile(t, wsSkills, "later", "no front matter\n")
	f.fake.Push(text("ok"))
	if code := f.api("POST", "/api/sessions/"+ses.ID+"/turns", map[string]any{"text": "hi"}, nil); code != 202 {
		t.Fatalf("start a turn: %d", code)
	}
	f.waitText(`.skill-broken[data-skill="later"]`, "does not begin with front matter")
}
