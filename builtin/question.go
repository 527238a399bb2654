package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/jean2/jean2/tool"
)

type questionIn struct {
	Title       string `json:"title"`
	Description string `json:"description"`
	Questions   []struct {
		Type        string `json:"type"`
		Question    string `json:"question"`
		Description string `json:"description"`
		Options     []struct {
			Label       string `json:"label"`
			Value       string `json:"value"`
			Description string `json:"description"`
		} `json:"options"`
		Min          *float64        `json:"min"`
		Max          *float64        `json:"max"`
		Placeholder  string          `json:"placeholder"`
		DefaultValue json.RawMessage `json:"defaultValue"`
	} `json:"questions"`
}

type questionAnswer struct {
	Question string          `json:"question"`
	Type     string          `json:"type"`
	Answer   json.RawMessage `json:"answer"`
}

// Question is question: a form of questions put to the person through ctx.ask.
func Question() tool.Tool {
	return define(tool.Definition{
		Name:         "question",
		Capabilities: []string{tool.CapabilityInteractiveUserInput},
		Description: "Ask the user structured questions and get typed answers back as tool results. " +
			"Use this when you need user input to make decisions, gather preferences, or clarify requirements. " +
			"Supports single_select (pick one option), multi_select (pick multiple options), text (free text input), and confirm (yes/no). " +
			"All questions are presented as a single form that the user fills out and submits once. " +
			"Returns an array of answers in the same order as the questions.\n\n" +
			"Notes:\n- single_select returns a string (the selected value)\n- multi_select returns a string[]\n- text returns a string\n- confirm returns a boolean\n" +
			"- CRITICAL: Each option within a single_select/multi_select MUST have a unique, non-empty `value` (a distinct machine-readable slug).",
		InputSchema: []byte(`{"type":"object","properties":{
			"title":{"type":"string","description":"Title/header for the question form (e.g. \"Deployment Configuration\")"},
			"description":{"type":"string","description":"Optional description or context shown above the questions"},
			"questions":{"type":"array","description":"Array of questions to ask the user. Each question has a type and type-specific fields.","items":{"type":"object","properties":{
				"type":{"type":"string","enum":["single_select","multi_select","text","confirm"],"description":"The question type"},
				"question":{"type":"string","description":"The question text shown to the user"},
				"description":{"type":"string","description":"Optional additional context for the question"},
				"options":{"type":"array","description":"Available options (for single_select and multi_select)","items":{"type":"object","properties":{
					"label":{"type":"string","description":"Display label"},
					"value":{"type":"string","description":"Value returned when selected"},
					"description":{"type":"string","description":"Optional description of this option"}},"required":["label","value"]}},
				"min":{"type":"number","description":"Minimum selections required (multi_select only)"},
				"max":{"type":"number","description":"Maximum selections allowed (multi_select only)"},
				"placeholder":{"type":"string","description":"Placeholder text (text type only)"},
				"defaultValue":{"description":"Default value — string for text, boolean for confirm"}},
				"required":["type","question"]}}},
			"required":["title","questions"]}`),
		Timeout: 300000,
	}, askQuestions)
}

func askQuestions(ctx context.Context, c *tool.Context, in questionIn) tool.Result {
	if len(in.Questions) == 0 {
		return failf("At least one question is required")
	}
	if strings.TrimSpace(in.Title) == "" {
		return failf("Title is required")
	}
	form := tool.Ask{Type: tool.AskForm, Target: "human", Question: in.Title, Description: in.Description}
	for qi, q := range in.Questions {
		a := tool.Ask{Type: q.Type, Question: q.Question, Description: q.Description, Placeholder: q.Placeholder}
		if len(q.DefaultValue) > 0 && string(q.DefaultValue) != "null" {
			a.DefaultValue = q.DefaultValue
		}
		if q.Min != nil {
			n := int(*q.Min)
			a.Min = &n
		}
		if q.Max != nil {
			n := int(*q.Max)
			a.Max = &n
		}
		seen := map[string]bool{}
		var dups []string
		for _, o := range q.Options {
			v := strings.TrimSpace(o.Value)
			if v == "" {
				return failf("Question %d (%q): option %q has an empty value. Every option must have a unique, non-empty value field.", qi+1, q.Question, o.Label)
			}
			if seen[v] {
				dups = append(dups, fmt.Sprintf("%q", v))
			}
			seen[v] = true
			val, _ := json.Marshal(o.Value)
			a.Options = append(a.Options, tool.Option{Label: o.Label, Value: val, Description: o.Description})
		}
		if len(dups) > 0 {
			return failf("Question %d (%q): duplicate option value(s): %s. Every option must have a unique value field. Fix the duplicates and try again.", qi+1, q.Question, strings.Join(dups, ", "))
		}
		form.Questions = append(form.Questions, a)
	}
	if err := form.Check(); err != nil {
		return failf("%v", err)
	}
	c.Logger.Info(fmt.Sprintf("Asking user %d questions: %s", len(in.Questions), in.Title))
	raw, err := c.Asker.Ask(ctx, form)
	if err != nil {
		return failf("%v", err)
	}
	var resp tool.FormResponse
	if err := json.Unmarshal(raw, &resp); err != nil {
		return failf("the answer to the form is not a form response: %v", err)
	}
	answers := make([]questionAnswer, 0, len(in.Questions))
	for i, a := range resp.Answers {
		if i >= len(in.Questions) {
			break
		}
		answers = append(answers, questionAnswer{Question: in.Questions[i].Question, Type: in.Questions[i].Type, Answer: a.Answer})
	}
	return ok(struct {
		Title   string           `json:"title"`
		Answers []questionAnswer `json:"answers"`
	}{in.Title, answers}, nil)
}
