package skills

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/jean2/jean2/tool"
	"gopkg.in/yaml.v3"
)

// A skill a person invokes (a /name command in Claude Code, an MCP prompt in jean2) takes
// arguments, substituted into its body as Claude Code does: $ARGUMENTS is everything given,
// $ARGUMENTS[N] and $N the N-th word (0-based, split as a shell would, quotes removed), and
// $name a named argument, when the front matter declares names (`arguments: name type`).
// When the body places no argument and something was given, "ARGUMENTS: …" is appended, so
// nothing given is lost.

// Argument is a named argument a SKILL.md's front matter declares. Claude Code's form is a
// list of names (`arguments: issue branch`, or a YAML list of them); jean2 also takes a
// list of maps that describe each (name, description, required, values), values being what
// a client may offer to complete it.
type Argument struct {
	Name        string   `json:"name" yaml:"name"`
	Description string   `json:"description,omitempty" yaml:"description"`
	Required    bool     `json:"required,omitempty" yaml:"required"`
	Values      []string `json:"values,omitempty" yaml:"values"`
	// Ask is the question put to the person when a client gets the prompt without this
	// argument (an MCP client's elicitation), in ctx.ask's words.
	Ask *ArgumentAsk `json:"ask,omitempty" yaml:"ask"`
}

// ArgumentAsk is how an argument is asked for: a question of one of the kinds ctx.ask
// puts (text, number, confirm, single_select, multi_select), written as in a tool
// (`ask: {type: single_select, question: "Which page?", options: [{label: Home, value: home}]}`),
// or just the question for a text answer (`ask: What context should the prompt use?`).
type ArgumentAsk struct{ tool.Ask }

// askable are the ask types an argument may be asked with: one answer each.
var askable = map[string]bool{tool.AskText: true, tool.AskNumber: true, tool.AskConfirm: true, tool.AskSingleSelect: true, tool.AskMultiSelect: true}

func (a *ArgumentAsk) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind == yaml.ScalarNode {
		a.Ask = tool.Ask{Type: tool.AskText, Question: n.Value}
	} else {
		// The ask is read as ctx.ask's JSON is, so its fields are the same words.
		var v any
		if err := n.Decode(&v); err != nil {
			return fmt.Errorf("line %d: ask: %v", n.Line, err)
		}
		data, err := json.Marshal(v)
		if err == nil {
			err = json.Unmarshal(data, &a.Ask)
		}
		if err != nil {
			return fmt.Errorf("line %d: ask is a question (\"ask: Which page?\") or an ask as ctx.ask takes it: %v", n.Line, err)
		}
	}
	if !askable[a.Type] {
		return fmt.Errorf("line %d: an argument's ask is of type text, number, confirm, single_select or multi_select, not %q", n.Line, a.Type)
	}
	if err := a.Check(); err != nil {
		return fmt.Errorf("line %d: ask: %w", n.Line, err)
	}
	return nil
}

// argList is the front matter's arguments in any of its forms.
type argList []Argument

// argName is what a named argument may be called ($name must find its end).
var argName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

func (l *argList) UnmarshalYAML(n *yaml.Node) error {
	var out []Argument
	switch n.Kind {
	case yaml.ScalarNode:
		for _, name := range strings.Fields(n.Value) {
			out = append(out, Argument{Name: name})
		}
	case yaml.SequenceNode:
		for _, item := range n.Content {
			var a Argument
			if item.Kind == yaml.ScalarNode {
				a.Name = item.Value
			} else if err := item.Decode(&a); err != nil {
				return fmt.Errorf("arguments: %v", err)
			}
			out = append(out, a)
		}
	default:
		return fmt.Errorf("line %d: arguments is a list of names (\"arguments: issue branch\")", n.Line)
	}
	seen := map[string]bool{}
	for _, a := range out {
		if !argName.MatchString(a.Name) || a.Name == "ARGUMENTS" || seen[a.Name] {
			return fmt.Errorf("line %d: the argument name %q is not a distinct name of letters, digits and underscores", n.Line, a.Name)
		}
		seen[a.Name] = true
	}
	*l = out
	return nil
}

// Expand substitutes a person's arguments into a skill's body. named holds the values of
// the declared arguments (in their order, names); raw is what was given as one string
// when the skill declares no names.
func Expand(body string, names []Argument, named map[string]string, raw string) string {
	var words []string
	if len(names) > 0 {
		parts := make([]string, 0, len(names))
		for _, a := range names {
			v := named[a.Name]
			words = append(words, v)
			if strings.ContainsAny(v, " \t\n\"'") {
				v = strconv.Quote(v)
			}
			if v != "" {
				parts = append(parts, v)
			}
		}
		raw = strings.Join(parts, " ")
	} else {
		words = splitWords(raw)
	}
	usedAll := false // any argument placed: nothing is appended
	out := placeholder.ReplaceAllStringFunc(body, func(m string) string {
		key := m[1:]
		switch {
		case key == "ARGUMENTS":
			usedAll = true
			return raw
		case strings.HasPrefix(key, "ARGUMENTS["):
			usedAll = true
			return word(words, strings.TrimSuffix(strings.TrimPrefix(key, "ARGUMENTS["), "]"))
		case key[0] >= '0' && key[0] <= '9':
			usedAll = true
			return word(words, key)
		}
		if v, ok := named[key]; ok || declared(names, key) {
			usedAll = true
			return v
		}
		return m // not an argument: a shell variable in an example, kept as written
	})
	if !usedAll && strings.TrimSpace(raw) != "" {
		out = strings.TrimRight(out, "\n") + "\n\nARGUMENTS: " + raw
	}
	return out
}

// placeholder finds $ARGUMENTS, $ARGUMENTS[N], $N and $name.
var placeholder = regexp.MustCompile(`\$(ARGUMENTS\[\d+\]|ARGUMENTS|\d+|[A-Za-z_][A-Za-z0-9_]*)`)

func declared(names []Argument, key string) bool {
	for _, a := range names {
		if a.Name == key {
			return true
		}
	}
	return false
}

// word is the i-th of words ("" past the end).
func word(words []string, index string) string {
	i, err := strconv.Atoi(index)
	if err != nil || i < 0 || i >= len(words) {
		return ""
	}
	return words[i]
}

// splitWords splits s as a shell splits words: at blanks, except inside single or double
// quotes, which are removed; a backslash outside single quotes keeps the next character.
func splitWords(s string) []string {
	var words []string
	var cur strings.Builder
	inWord := false
	var quote rune
	escaped := false
	for _, r := range s {
		switch {
		case escaped:
			cur.WriteRune(r)
			escaped = false
		case r == '\\' && quote != '\'':
			escaped, inWord = true, true
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(r)
		case r == '"' || r == '\'':
			quote, inWord = r, true
		case r == ' ' || r == '\t' || r == '\n':
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
				inWord = false
			}
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}
