package e2e_test

import (
	"testing"
)

// TestSubagentInTaskCard: a task call's card shows the subagent it started; the subagent's
// question is asked on that card and answered there; the child's transcript unfolds under the
// card, and its link opens the child's session.
func TestSubagentInTaskCard(t *testing.T) {
	f := newFixture(t)
	s := f.session("subagents")
	confirm := `{"ask":{"type":"confirm","question":"Child asks: go on?"}}`
	f.fake.Push(
		toolCalls([2]string{"task", `{"description":"look around","prompt":"CHILD: look around"}`}), // the parent
		toolCalls([2]string{"ask_it", confirm}),                                                     // the child
		text("CHILD-ANSWER-77"),                                                                     // the child
		text("Parent done."),                                                                        // the parent
	)
	f.open("#/s/" + s.ID)
	f.typeInto("#composer-input", "delegate\n")

	f.waitText(`.tool-card[data-tool="task"] details.subagent summary`, "Subagent ses_")
	f.waitText(`.tool-card[data-tool="task"] .ask-confirm`, "Child asks: go on?")
	f.clickText(`.tool-card[data-tool="task"] .ask-confirm`, "Yes")
	f.waitText(".message.assistant", "Parent done.")

	f.click(`.tool-card[data-tool="task"] details.subagent summary`)
	f.waitText(`.tool-card[data-tool="task"] .subagent-transcript`, "CHILD-ANSWER-77")
	f.waitText(`.tool-card[data-tool="task"] .subagent-transcript`, "ask_it complete")
	f.waitText(`.tool-card[data-tool="task"] .subagent-transcript`, "CHILD: look around")

	f.click(`.tool-card[data-tool="task"] a.subagent-link`)
	f.waitJS("the child's session to open", `location.hash.startsWith("#/s/ses_") && location.hash !== "#/s/`+s.ID+`"`)
	f.waitText(".message.assistant", "CHILD-ANSWER-77")
}
