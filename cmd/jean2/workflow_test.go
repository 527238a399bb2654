package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"

	"github.com/jean2/jean2/provider/providertest"
)

// workflowStep is a step of a GitHub Actions job, as far as this test reads it.
type workflowStep struct {
	Name string            `yaml:"name"`
	Env  map[string]string `yaml:"env"`
	Run  string            `yaml:"run"`
}

// docsWorkflow is the GitHub Actions workflow docs/automation.md shows, parsed.
func docsWorkflow(t *testing.T) map[string][]workflowStep {
	t.Helper()
	doc, err := os.ReadFile("../../docs/automation.md")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)```yaml\n(# .github/workflows/[^\n]*\n.*?)```").FindSubmatch(doc)
	if m == nil {
		t.Fatal("docs/automation.md shows no workflow (```yaml # .github/workflows/…)")
	}
	var wf struct {
		Jobs map[string]struct {
			Steps []workflowStep `yaml:"steps"`
		} `yaml:"jobs"`
	}
	if err := yaml.Unmarshal(m[1], &wf); err != nil {
		t.Fatalf("the workflow in docs/automation.md is not YAML: %v", err)
	}
	jobs := map[string][]workflowStep{}
	for name, j := range wf.Jobs {
		jobs[name] = j.Steps
	}
	return jobs
}

// The review step of the workflow in docs/automation.md, run as a runner runs it (bash -eo
// pipefail, the step's env with the expressions filled in, the checkout as the working
// folder) against a pull request's diff, with the scripted provider as the model: the diff
// reaches the model on stdin, the model's attempt to rewrite a file is refused (the plan
// agent), nothing is written, the step succeeds and review.md is the model's final answer
// for the Comment step.
func TestGitHubWorkflowReviewStep(t *testing.T) {
	var review *workflowStep
	for _, steps := range docsWorkflow(t) {
		for i := range steps {
			if steps[i].Name == "Review" {
				review = &steps[i]
			}
		}
	}
	if review == nil || review.Run == "" {
		t.Fatal("the workflow has no Review step with a run script")
	}
	c := newChatEnv(t)
	// The built-in write-file, not the chat tests' own.
	if err := os.RemoveAll(filepath.Join(c.home, "tools", "write-file")); err != nil {
		t.Fatal(err)
	}
	git := func(args ...string) string {
		cmd := exec.Command("git", append([]string{"-C", c.ws, "-c", "user.name=ci", "-c", "user.email=ci@example.com"}, args...)...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	git("init", "-q", "-b", "main")
	writeFile(t, filepath.Join(c.ws, "calc.go"), []byte("package calc\n\nfunc Add(a, b int) int { return a + b }\n"))
	git("add", ".")
	git("commit", "-qm", "base")
	base := git("rev-parse", "HEAD")
	writeFile(t, filepath.Join(c.ws, "calc.go"), []byte("package calc\n\nfunc Add(a, b int) int { return a - b }\n"))
	git("commit", "-qam", "the pull request")

	c.fake.Respond(func(providertest.Request) providertest.Reply { return providertest.OpenAIText("test-model", "A title") })
	c.fake.Push(
		providertest.OpenAIToolCall("test-model", "call_w", "write-file", `{"path":"calc.go","content":"package calc\n"}`),
		providertest.OpenAIText("test-model", "Add now subtracts: `a - b` should be `a + b`."))

	outputs := filepath.Join(t.TempDir(), "github_output")
	cmd := exec.Command("bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", review.Run)
	cmd.Dir = c.ws
	cmd.Env = c.env("PATH="+filepath.Dir(jean2Bin)+":"+os.Getenv("PATH"), "GITHUB_OUTPUT="+outputs)
	for k, v := range review.Env {
		switch {
		case strings.Contains(v, "secrets.OPENAI_API_KEY"):
			v = c.fake.Key
		case strings.Contains(v, "runner.temp"):
			v = c.home
		case strings.Contains(v, "pull_request.base.sha"):
			v = base
		case k == "OPENAI_MODEL":
			v = "test-model"
		}
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the Review step failed: %v\n%s", err, out)
	}
	got, _ := os.ReadFile(filepath.Join(c.ws, "review.md"))
	if string(got) != "Add now subtracts: `a - b` should be `a + b`.\n" {
		t.Fatalf("review.md is %q; the step printed:\n%s", got, out)
	}
	if got := c.toolResultSent(1); !strings.Contains(got, `plan`) || !strings.Contains(got, "refused") {
		t.Errorf("the model was told of the write: %s", got)
	}
	if src, _ := os.ReadFile(filepath.Join(c.ws, "calc.go")); !strings.Contains(string(src), "a - b") {
		t.Errorf("the review changed the checkout: calc.go is now %q", src)
	}
	if sent := string(c.fake.Requests()[0].Body); !strings.Contains(sent, `-func Add(a, b int) int { return a + b }`) {
		t.Errorf("the diff did not reach the model: %s", sent)
	}
	if status, _ := os.ReadFile(outputs); len(status) != 0 {
		t.Errorf("GITHUB_OUTPUT has %q: the run did not end with 0", status)
	}
}
