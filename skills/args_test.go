package skills

import (
	"reflect"
	"strings"
	"testing"

	"github.com/jean2/jean2/tool"
)

// Arguments are declared as Claude Code declares them (a string or a list of names) or as
// jean2's described list, and a bad name is the skill's error.
func TestArgumentsFrontMatter(t *testing.T) {
	nine := 9.0
	cases := []struct {
		name, yml string
		want      []Argument
		err       string
	}{
		{"names in a string", "arguments: issue branch", []Argument{{Name: "issue"}, {Name: "branch"}}, ""},
		{"a list of names", "arguments: [issue, branch]", []Argument{{Name: "issue"}, {Name: "branch"}}, ""},
		{"described", "arguments:\n  - name: format\n    description: the output\n    required: true\n    values: [pdf, html]",
			[]Argument{{Name: "format", Description: "the output", Required: true, Values: []string{"pdf", "html"}}}, ""},
		{"bad name", "arguments: [a-b]", nil, "not a distinct name"},
		{"twice", "arguments: a a", nil, "not a distinct name"},
		{"a map", "arguments: {a: 1}", nil, "list of names"},
		{"asked as a question", "arguments:\n  - name: ctx\n    ask: What context?",
			[]Argument{{Name: "ctx", Ask: &ArgumentAsk{tool.Ask{Type: tool.AskText, Question: "What context?"}}}}, ""},
		{"asked as ctx.ask asks", "arguments:\n  - name: n\n    ask: {type: number, question: \"How many?\", maximum: 9}",
			[]Argument{{Name: "n", Ask: &ArgumentAsk{tool.Ask{Type: tool.AskNumber, Question: "How many?", Maximum: &nine}}}}, ""},
		{"an ask with no one answer", "arguments:\n  - name: n\n    ask: {type: permission, question: May I}", nil, "not \"permission\""},
		{"an ask with no question", "arguments:\n  - name: n\n    ask: {type: text}", nil, "text ask needs a question"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			m, _, err := Parse([]byte("---\nname: s\ndescription: d\nargument-hint: \"[x]\"\n"+c.yml+"\n---\nbody"), "s")
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want one with %q", err, c.err)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(m.Arguments, c.want) || m.ArgumentHint != "[x]" {
				t.Fatalf("Parse = %+v, %v; want arguments %+v", m, err, c.want)
			}
		})
	}
}

// Substitution follows Claude Code: $ARGUMENTS whole, $N and $ARGUMENTS[N] 0-based and
// shell-split, $name by declared name, ARGUMENTS: appended when the body does not take them.
func TestExpand(t *testing.T) {
	two := []Argument{{Name: "name"}, {Name: "kind"}}
	cases := []struct {
		name, body string
		names      []Argument
		named      map[string]string
		raw, want  string
	}{
		{"whole", "Fix $ARGUMENTS now.", nil, nil, "issue 12", "Fix issue 12 now."},
		{"positional", "[$0] [$1] [$ARGUMENTS[1]] [$2]", nil, nil, `"hello world" 'x y'`, "[hello world] [x y] [x y] []"},
		{"named", "A $kind called $name ($ARGUMENTS; $0).", two, map[string]string{"name": "Search Bar", "kind": "form"}, "", `A form called Search Bar ("Search Bar" form; Search Bar).`},
		{"appended", "Review the code.", nil, nil, "main.go", "Review the code.\n\nARGUMENTS: main.go"},
		{"nothing given", "Review the code.", nil, nil, "", "Review the code."},
		{"other dollars kept", "echo $HOME costs $5 for $name", two, map[string]string{}, "", "echo $HOME costs  for "},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Expand(c.body, c.names, c.named, c.raw); got != c.want {
				t.Fatalf("Expand = %q, want %q", got, c.want)
			}
		})
	}
}
