package llm

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/jean2/jean2/tool"
)

// StructuredError is the failure of Structured after its repair attempt: what was still wrong
// with the model's last answer.
type StructuredError struct {
	Problems []string // each violation of the schema, or why no JSON could be read
	Answer   string   // the model's last answer, as it came
}

func (e *StructuredError) Error() string {
	return "the model's answer does not match the schema after one repair attempt: " + strings.Join(e.Problems, "; ")
}

// maxEcho bounds how much of a wrong answer is sent back to the model in the repair prompt.
const maxEcho = 8000

// Structured asks gen for a JSON value matching req.Schema and returns it compacted. The
// schema goes into the system text; the answer may come in a ```json fence or with prose
// around it. An answer that is not valid JSON or breaks the schema gets exactly one repair
// attempt that tells the model what was wrong; after that, a *StructuredError lists the
// problems. A failure of gen itself is returned as it is, without a repair attempt.
func Structured(ctx context.Context, gen TextGenerator, req tool.StructuredRequest) (json.RawMessage, error) {
	if gen == nil {
		return nil, errUnconfigured()
	}
	if len(bytes.TrimSpace(req.Schema)) == 0 {
		return nil, errors.New("generate structured: the request has no schema; give a JSON Schema the answer must match")
	}
	schema, err := tool.CompileSchema(req.Schema)
	if err != nil {
		return nil, fmt.Errorf("generate structured: schema: %w", err)
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, req.Schema); err != nil {
		return nil, fmt.Errorf("generate structured: schema: %w", err)
	}

	first := req.TextRequest
	first.System = strings.TrimSpace(req.System + "\n\n" +
		"Answer with a single JSON value that matches this JSON Schema. Output only the JSON, " +
		"with no explanation and no Markdown fences.\nJSON Schema:\n" + compact.String())

	answer, err := gen.GenerateText(ctx, first)
	if err != nil {
		return nil, fmt.Errorf("generate structured: %w", err)
	}
	value, problems := parseAnswer(schema, answer)
	if problems == nil {
		return value, nil
	}

	repair := first
	repair.Prompt = req.Prompt + "\n\nYour previous answer was:\n" + clip(answer, maxEcho) +
		"\n\nIt was rejected: " + strings.Join(problems, "; ") +
		"\nAnswer again with only the corrected JSON value that matches the schema."
	answer, err = gen.GenerateText(ctx, repair)
	if err != nil {
		return nil, fmt.Errorf("generate structured (repair attempt): %w", err)
	}
	value, problems = parseAnswer(schema, answer)
	if problems == nil {
		return value, nil
	}
	return nil, &StructuredError{Problems: problems, Answer: answer}
}

// parseAnswer extracts and validates the JSON of an answer; problems is nil when it is good.
func parseAnswer(schema *tool.Schema, answer string) (json.RawMessage, []string) {
	raw, err := ExtractJSON(answer)
	if err != nil {
		return nil, []string{err.Error()}
	}
	if err := schema.Validate(raw); err != nil {
		var ve *tool.ValidationError
		if errors.As(err, &ve) {
			return nil, ve.Problems
		}
		return nil, []string{err.Error()}
	}
	return raw, nil
}

// maxCandidates bounds how many '{' or '[' ExtractJSON tries inside prose, so a long answer
// full of braces costs little.
const maxCandidates = 64

// ExtractJSON returns the JSON value of a model's answer, compacted: the whole answer when it
// is JSON, else the content of its first ``` fence (any language tag), else the first JSON
// object or array that appears in the text.
func ExtractJSON(answer string) (json.RawMessage, error) {
	s := strings.TrimSpace(answer)
	if s != "" && json.Valid([]byte(s)) {
		return compactJSON([]byte(s))
	}
	if inner, ok := fenced(s); ok {
		s = strings.TrimSpace(inner)
	}
	if s == "" {
		return nil, errors.New("the answer is empty; expected a JSON value")
	}
	if json.Valid([]byte(s)) {
		return compactJSON([]byte(s))
	}
	tried := 0
	for i := 0; i < len(s) && tried < maxCandidates; i++ {
		if s[i] != '{' && s[i] != '[' {
			continue
		}
		tried++
		var raw json.RawMessage
		if json.NewDecoder(strings.NewReader(s[i:])).Decode(&raw) == nil {
			return compactJSON(raw)
		}
	}
	return nil, errors.New("the answer holds no JSON value; expected only the JSON, with no prose")
}

// fenced returns the content of the first ``` fence in s; an unclosed fence runs to the end.
func fenced(s string) (string, bool) {
	start := strings.Index(s, "```")
	if start < 0 {
		return "", false
	}
	rest := s[start+3:]
	// The opening fence's line may name a language (```json); the content starts after it.
	if nl := strings.IndexByte(rest, '\n'); nl >= 0 {
		tag := strings.TrimSpace(rest[:nl])
		if !strings.ContainsAny(tag, "{[\"") {
			rest = rest[nl+1:]
		}
	}
	if end := strings.Index(rest, "```"); end >= 0 {
		rest = rest[:end]
	}
	return rest, true
}

func compactJSON(b []byte) (json.RawMessage, error) {
	var buf bytes.Buffer
	if err := json.Compact(&buf, b); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}
