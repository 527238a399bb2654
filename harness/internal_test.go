package harness

import (
	"strings"
	"testing"

	"github.com/jean2/jean2/store"
)

func TestCheckArgs(t *testing.T) {
	for args, want := range map[string]string{
		`{"a":1}`:         "",
		"  {}\n":          "",
		"":                "arguments are not valid JSON: they are empty",
		`{"a":`:           "arguments are not valid JSON: unexpected end of JSON input; send an object matching the schema",
		`[1,2]`:           "arguments must be a JSON object, not an array",
		`"x"`:             "arguments must be a JSON object, not a string",
		`null`:            "arguments must be a JSON object, not null",
		`{"a":1} {"b":2}`: "arguments are not valid JSON: invalid character '{' after top-level value",
	} {
		err := checkArgs(args)
		if (want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), want)) {
			t.Errorf("checkArgs(%q) = %v, want %q", args, err, want)
		}
	}
	long := `{"text":"` + strings.Repeat("é", 300)
	if err := checkArgs(long); err == nil || !strings.Contains(err.Error(), "bytes in all") || !strings.Contains(err.Error(), "send an object") {
		t.Fatalf("long args: %v", err)
	}
}

// The transcript keeps one result per call, seals orphans, drops broken-off answers and
// visualizations, and turns system messages into system text.
func TestTranscript(t *testing.T) {
	call := func(id, status, result string) store.Part {
		return store.Part{Kind: store.PartToolCall, CallID: id, ToolName: "t", Args: `{}`, Status: store.Status(status), Result: result,
			Visualization: []byte(`{"type":"none","message":"VIZ"}`)}
	}
	history := []store.Message{
		{ID: "u1", Role: store.RoleUser, Content: "hi"},
		{ID: "s1", Role: store.RoleSystem, Content: "be kind"},
		{ID: "a1", Role: store.RoleAssistant, Finish: "tool_calls", Parts: []store.Part{
			{Kind: store.PartText, Text: "let me "}, call("c1", "complete", `{"success":true}`), {Kind: store.PartText, Text: "see"},
			call("c2", "pending", ""), call("c1", "complete", `{"success":true,"result":"dup"}`),
			call("c3", "error", ""), {Kind: store.PartToolCall, CallID: "c4", ToolName: "t", Args: `{"bad`, Status: store.StatusError, Result: `{"success":false}`},
		}},
		{ID: "a2", Role: store.RoleAssistant, Finish: finishDropped, Parts: []store.Part{{Kind: store.PartText, Text: "broken"}, call("c9", "pending", "")}},
		{ID: "a3", Role: store.RoleAssistant, Parts: []store.Part{}},
		{ID: "u2", Role: store.RoleUser, Content: ""},
		{ID: "u3", Role: store.RoleUser, Content: "", Parts: []store.Part{{Kind: store.PartImage, MediaType: "image/png", Data: []byte{1}}}},
	}
	msgs, system, orphans := transcript(history)
	if len(system) != 1 || system[0] != "be kind" {
		t.Fatalf("system %q", system)
	}
	if len(orphans) != 1 || orphans[0] != (orphan{2, 3}) {
		t.Fatalf("orphans %+v", orphans)
	}
	var got []string
	for _, m := range msgs {
		s := string(m.Role) + ":" + m.Text
		for _, c := range m.ToolCalls {
			s += "|" + c.ID + "(" + c.Args + ")"
		}
		if m.ToolCallID != "" {
			s = string(m.Role) + ":" + m.ToolCallID
			if m.IsError {
				s += "!"
			}
		}
		if strings.Contains(m.Text, "VIZ") {
			t.Fatalf("a visualization reached the model: %+v", m)
		}
		got = append(got, s)
	}
	want := []string{"user:hi", "assistant:let me see|c1({})|c2({})|c3({})|c4({})", "tool:c1", "tool:c2!", "tool:c3!", "tool:c4!", "user:"}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("transcript:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if msgs[2].Text != `{"success":true}` || !strings.Contains(msgs[3].Text, "interrupted") || len(msgs[6].Images) != 1 {
		t.Fatalf("orphan result %q, images %d", msgs[3].Text, len(msgs[6].Images))
	}
}
