package builtin

import (
	"context"
	"encoding/json"

	"sort"
	"strings"

	"github.com/jean2/jean2/tool"
)

// todoFact is the session fact that holds the session's todo list. The list lives in the
// session's facts (tool.SessionFacts), which the harness keeps per session for its life;
// it is not written to the store, so a server restart forgets it.
const todoFact = "jean2.todos"

type todoItem struct {
	Content  string `json:"content"`
	Status   string `json:"status"`
	Priority string `json:"priority"`
}

type todoViz struct {
	Type  string     `json:"type"`
	Title string     `json:"title"`
	Items []todoItem `json:"items"`
}

var (
	todoStatuses   = []string{"pending", "in_progress", "completed", "cancelled"}
	todoPriorities = []string{"high", "medium", "low"}
)

// TodoRead is todoread: the session's task list, high priority first.
func TodoRead() tool.Tool {
	return define(tool.Definition{
		Name:        "todoread",
		Description: "Read the current task list for the session.\n\nUsage:\n- Use when starting a new task or when asked to check current progress\n- Useful for tracking multi-step tasks throughout a session\n\nNotes:\n- Returns tasks sorted by priority (high → medium → low), then in the order they were written\n- Each task has: content, status (pending/in_progress/completed/cancelled), priority (high/medium/low)\n- Use todowrite to update the list",
		InputSchema: []byte(`{"type":"object","properties":{}}`),
		Timeout:     5000,
		Annotations: readOnly(),
	}, func(ctx context.Context, c *tool.Context, _ struct{}) tool.Result {
		var todos []todoItem
		if raw, found := c.Session.Get(todoFact); found {
			if err := json.Unmarshal(raw, &todos); err != nil {
				return failf("the session's todo list is unreadable: %v", err)
			}
		}
		rank := map[string]int{"high": 0, "medium": 1, "low": 2}
		sort.SliceStable(todos, func(i, j int) bool { return rank[todos[i].Priority] < rank[todos[j].Priority] })
		if todos == nil {
			todos = []todoItem{}
		}
		return ok(struct {
			Todos []todoItem `json:"todos"`
		}{todos}, todoViz{Type: tool.VizTodoList, Title: "Todo List", Items: todos})
	})
}

type todoWriteIn struct {
	Todos []struct {
		Content  *string `json:"content"`
		Status   string  `json:"status"`
		Priority *string `json:"priority"`
	} `json:"todos"`
}

// TodoWrite is todowrite: replaces the session's task list.
func TodoWrite() tool.Tool {
	return define(tool.Definition{
		Name:        "todowrite",
		Description: "Update the task list for the current session.\n\nUsage:\n- Call with complete new list (replaces existing)\n- Set status to 'in_progress' for the task currently being worked on\n- Set status to 'completed' when a task is done\n- Set status to 'cancelled' for abandoned tasks\n\nParameters:\n- todos (required): Array of { content, status, priority? }\n- content: Brief description of the task\n- status: pending | in_progress | completed | cancelled\n- priority: high | medium (default) | low\n\nWhen to use:\n- Track complex multi-step tasks\n- Show progress to user\n- Mark current work item\n\nWhen NOT to use:\n- Simple single tasks that don't need tracking",
		InputSchema: []byte(`{"type":"object","properties":{"todos":{"type":"array","items":{"type":"object","properties":{
			"content":{"type":"string"},
			"status":{"type":"string","enum":["pending","in_progress","completed","cancelled"]},
			"priority":{"type":"string","enum":["high","medium","low"]}}},
			"description":"Array of todo items to write"}},"required":["todos"]}`),
		Timeout: 30000,
	}, func(ctx context.Context, c *tool.Context, in todoWriteIn) tool.Result {
		items := make([]todoItem, 0, len(in.Todos))
		for _, t := range in.Todos {
			if t.Content == nil || strings.TrimSpace(*t.Content) == "" {
				return failf("each todo must have content")
			}
			if !contains(todoStatuses, t.Status) {
				return failf("invalid status: %s. Must be one of: %s", t.Status, strings.Join(todoStatuses, ", "))
			}
			p := "medium"
			if t.Priority != nil {
				if !contains(todoPriorities, *t.Priority) {
					return failf("invalid priority: %s. Must be one of: %s", *t.Priority, strings.Join(todoPriorities, ", "))
				}
				p = *t.Priority
			}
			items = append(items, todoItem{Content: *t.Content, Status: t.Status, Priority: p})
		}
		raw, err := json.Marshal(items)
		if err != nil {
			return failf("todo list: %v", err)
		}
		if err := c.Session.Set(todoFact, raw); err != nil {
			return failf("save the todo list: %v", err)
		}
		return ok(struct {
			Count int `json:"count"`
		}{len(items)}, todoViz{Type: tool.VizTodoList, Title: "Todo List", Items: items})
	})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
