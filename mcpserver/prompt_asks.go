package mcpserver

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/jean2/jean2/skills"
	"github.com/jean2/jean2/tool"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A prompt's arguments may be asked for. An argument whose front matter (a skill's) or
// file (a saved prompt's) gives an ask, and that the client did not pass, is put to the
// person as the question, the way a tool's ctx.ask is: prompts/get answers with an
// input-required result whose inputRequests hold one elicitation per such argument, keyed
// by the argument's name (revision 2026-07-28, SEP-2322), and the client's retry carries
// the answers in inputResponses. A prompt is text made from its arguments, not a running
// call, so nothing is parked between the rounds: the retry is a new prompts/get with the
// answers beside the arguments. A client of 2025-11-25 gets the same questions as classic
// elicitation/create requests (the go-sdk's bridge for older clients sends them and calls
// the handler again with the answers). A client that declared no elicitation is not asked;
// a required argument it did not pass is then invalid params, as without an ask.

// askArguments are the arguments of a prompts/get: those given, with the answers of the
// retry's inputResponses for the asked ones; and the questions still to put, when some
// argument with an ask is missing and the client can be asked.
func askArguments(prompt string, args []skills.Argument, req *mcp.GetPromptRequest) (map[string]string, mcp.InputRequestMap, error) {
	given := map[string]string{}
	for k, v := range req.Params.Arguments {
		given[k] = v
	}
	canAsk := promptCaps(req).Elicitation != nil
	var questions mcp.InputRequestMap
	for _, a := range args {
		if a.Ask == nil || given[a.Name] != "" {
			continue
		}
		if resp, ok := req.Params.InputResponses[a.Name]; ok {
			v, err := readArgumentAnswer(prompt, a, resp)
			if err != nil {
				return nil, nil, err
			}
			given[a.Name] = v
			continue
		}
		if !canAsk {
			continue
		}
		params, err := argumentQuestion(prompt, a)
		if err != nil {
			return nil, nil, err
		}
		if questions == nil {
			questions = mcp.InputRequestMap{}
		}
		questions[a.Name] = params
	}
	return given, questions, nil
}

// promptArgument is an argument as prompts/list shows it. One with an ask is not
// required of the client: jean2 asks the person for it.
func promptArgument(a skills.Argument) *mcp.PromptArgument {
	return &mcp.PromptArgument{Name: a.Name, Description: a.Description, Required: a.Required && a.Ask == nil}
}

// promptCaps are the capabilities the client of a prompts/get declared.
func promptCaps(req *mcp.GetPromptRequest) mcp.ClientCapabilities {
	if req.Session != nil {
		return clientCaps(req.Session)
	}
	return metaCaps(req.Params.Meta)
}

// argumentAsk is an argument's ask as ctx.ask would put it, its one field named like the
// argument.
func argumentAsk(a skills.Argument) tool.Ask {
	q := a.Ask.Ask
	q.Name = a.Name
	if q.Description == "" {
		q.Description = a.Description
	}
	return q
}

// argumentQuestion is the elicitation that asks for an argument.
func argumentQuestion(prompt string, a skills.Argument) (*mcp.ElicitParams, error) {
	q := argumentAsk(a)
	params, _, err := askForm("", q)
	if err != nil {
		return nil, fmt.Errorf("prompts/get %s: the ask of argument %q: %w", prompt, a.Name, err)
	}
	params.Message = fmt.Sprintf("Prompt %s asks: %s", prompt, q.Question)
	if q.Description != "" {
		params.Message += "\n" + q.Description
	}
	return params, nil
}

// readArgumentAnswer is the argument's value from the client's answer to its question: a
// text as it is, a number or yes/no as written in JSON, choices joined with ", ".
// Declining or dismissing the question leaves the argument empty (a confirm too: "no
// answer" is not "no"), unless it is required.
func readArgumentAnswer(prompt string, a skills.Argument, resp mcp.InputResponse) (string, error) {
	res, ok := resp.(*mcp.ElicitResult)
	if !ok {
		return "", invalidParams("prompts/get %s: the answer for argument %q is a %T, not an elicitation result", prompt, a.Name, resp)
	}
	if res.Action != "accept" {
		if a.Required {
			return "", invalidParams("prompts/get %s: the argument %q is required, and the person did not give it (%s)", prompt, a.Name, res.Action)
		}
		return "", nil
	}
	_, read, err := askForm("", argumentAsk(a))
	if err != nil {
		return "", fmt.Errorf("prompts/get %s: the ask of argument %q: %w", prompt, a.Name, err)
	}
	raw, err := read(res)
	if err != nil {
		return "", invalidParams("prompts/get %s: argument %q: %v", prompt, a.Name, err)
	}
	return argumentText(raw), nil
}

// argumentText is an answer as the text substituted for the argument.
func argumentText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s
	}
	var list []any
	if json.Unmarshal(raw, &list) == nil {
		parts := make([]string, len(list))
		for i, v := range list {
			if str, ok := v.(string); ok {
				parts[i] = str
			} else {
				b, _ := json.Marshal(v)
				parts[i] = string(b)
			}
		}
		return strings.Join(parts, ", ")
	}
	return string(raw)
}
