package tooltest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/jean2/jean2/internal/fsutil"
	"github.com/jean2/jean2/tool"
)

// check compares what a case observed with what it expects and returns each difference,
// and the snapshot it wrote when updating.
func check(dir string, c Case, obs observed, res tool.Result, opts Options) (problems []string, updated string) {
	add := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	e := c.Expect
	success := true
	if e.Success != nil {
		success = *e.Success
	} else if e.Error != "" {
		success = false
	}
	if res.Success != success {
		if res.Success {
			add("success: got true, want false")
		} else {
			add("success: got false, want true; the tool failed with: %s", res.Error)
		}
	}
	if e.Error != "" && !strings.Contains(res.Error, e.Error) {
		add("error: got %q, want it to contain %q", res.Error, e.Error)
	}
	if len(e.Result) > 0 {
		for _, d := range partial("result", e.Result, res.Result) {
			add("%s", d)
		}
	}
	if len(e.Visualization) > 0 {
		var mode string
		if json.Unmarshal(e.Visualization, &mode) == nil && mode == "snapshot" {
			p, u := snapshot(dir, c, res.Visualization, opts.Update, add)
			if u {
				updated = p
			}
		} else {
			for _, d := range partial("visualization", e.Visualization, res.Visualization) {
				add("%s", d)
			}
		}
	}
	if e.asksSet {
		if len(e.Asks) != len(obs.asks) {
			add("asks: the tool made %d ask(s), want %d%s", len(obs.asks), len(e.Asks), describeAsks(obs.asks))
		}
		for i := range min(len(e.Asks), len(obs.asks)) {
			got, _ := json.Marshal(obs.asks[i])
			for _, d := range partial(fmt.Sprintf("asks[%d]", i), e.Asks[i], got) {
				add("%s", d)
			}
		}
	}
	for p, want := range sortedFiles(e.Files) {
		data, err := os.ReadFile(filepath.Join(obs.workspace, filepath.FromSlash(p)))
		switch {
		case want == nil && err == nil:
			add("files[%q]: the file exists, want it absent", p)
		case want == nil:
		case errors.Is(err, fs.ErrNotExist):
			add("files[%q]: the file is absent, want %q", p, clip(*want, 200))
		case err != nil:
			add("files[%q]: %v", p, err)
		case string(data) != *want:
			add("files[%q]: got %q, want %q", p, clip(string(data), 200), clip(*want, 200))
		}
	}
	if len(e.Ledger) > 0 {
		entries := make([]json.RawMessage, len(obs.ledger))
		for i, ch := range obs.ledger {
			ch.Path = relTo(obs.workspace, ch.Path)
			ch.Before = nil
			entries[i], _ = json.Marshal(ch)
		}
		at := 0
		for i, want := range e.Ledger {
			found := false
			for at < len(entries) {
				ok := len(partial("", want, entries[at])) == 0
				at++
				if ok {
					found = true
					break
				}
			}
			if !found {
				add("ledger[%d]: no change %s after the ones matched before; the ledger holds %s", i, compact(want), describeLedger(obs))
				break
			}
		}
	}
	if e.refusedSet {
		if len(e.Refused) == 0 && len(obs.refused) > 0 {
			add("refused: want nothing refused, got %s", quoteList(obs.refused))
		}
		for _, want := range e.Refused {
			found := false
			for _, r := range obs.refused {
				if strings.Contains(r, want) {
					found = true
					break
				}
			}
			if !found {
				if len(obs.refused) == 0 {
					add("refused: nothing was refused, want a refusal containing %q", want)
				} else {
					add("refused: no refusal contains %q; refused were %s", want, quoteList(obs.refused))
				}
			}
		}
	}
	if e.LLMCalls != nil && *e.LLMCalls != obs.llmCalls {
		add("llmCalls: the tool called the model %d time(s), want %d", obs.llmCalls, *e.LLMCalls)
	}
	for _, m := range obs.llmErrs {
		add("llm: %s", m)
	}
	return problems, updated
}

// snapshot compares a visualization with its golden file, or writes it when updating.
func snapshot(dir string, c Case, viz json.RawMessage, update bool, add func(string, ...any)) (string, bool) {
	rel := Dir + "/" + SnapshotDir + "/" + c.snapshotName()
	p := filepath.Join(dir, filepath.FromSlash(rel))
	got := pretty(viz)
	if update {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			add("visualization snapshot %s: %v", rel, err)
			return rel, false
		}
		if err := fsutil.WriteFileAtomic(p, got); err != nil {
			add("visualization snapshot %s: %v", rel, err)
			return rel, false
		}
		return rel, true
	}
	want, err := os.ReadFile(p)
	if errors.Is(err, fs.ErrNotExist) {
		add("visualization: no snapshot %s yet: run jean2 tools test --update to write it", rel)
		return rel, false
	}
	if err != nil {
		add("visualization snapshot %s: %v", rel, err)
		return rel, false
	}
	if !bytes.Equal(bytes.TrimSpace(want), bytes.TrimSpace(got)) {
		diffs := partial("visualization", want, viz)
		var more []string
		// The snapshot is the whole value: keys the tool added count too.
		for _, d := range partial("visualization", viz, want) {
			if strings.Contains(d, "is missing") {
				more = append(more, strings.Replace(d, "is missing, want", "is new (not in the snapshot):", 1))
			}
		}
		diffs = append(diffs, more...)
		if len(diffs) == 0 {
			diffs = []string{"visualization: differs from the snapshot"}
		}
		for _, d := range diffs {
			add("%s (snapshot %s; jean2 tools test --update rewrites it)", d, rel)
		}
	}
	return rel, false
}

func pretty(raw json.RawMessage) []byte {
	if len(raw) == 0 {
		return []byte("null\n")
	}
	var buf bytes.Buffer
	if json.Indent(&buf, raw, "", "  ") != nil {
		return append(raw, '\n')
	}
	buf.WriteByte('\n')
	return buf.Bytes()
}

// partial reports where got does not match want: each of want's object keys must be in got
// with a matching value, arrays must have the same length and match item by item, other
// values must be equal.
func partial(path string, want, got json.RawMessage) []string {
	var w, g any
	if err := json.Unmarshal(want, &w); err != nil {
		return []string{fmt.Sprintf("%s: the expected value is not JSON: %v", path, err)}
	}
	if len(bytes.TrimSpace(got)) == 0 {
		got = json.RawMessage("null")
	}
	if err := json.Unmarshal(got, &g); err != nil {
		return []string{fmt.Sprintf("%s: the value is not JSON: %v", path, err)}
	}
	var out []string
	match(path, w, g, &out)
	return out
}

func match(path string, want, got any, out *[]string) {
	if len(*out) >= 20 {
		return
	}
	switch w := want.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			*out = append(*out, fmt.Sprintf("%s: got %s, want an object", orRoot(path), show(got)))
			return
		}
		keys := make([]string, 0, len(w))
		for k := range w {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			gv, ok := g[k]
			if !ok {
				*out = append(*out, fmt.Sprintf("%s is missing, want %s", join(path, k), show(w[k])))
				continue
			}
			match(join(path, k), w[k], gv, out)
		}
	case []any:
		g, ok := got.([]any)
		if !ok {
			*out = append(*out, fmt.Sprintf("%s: got %s, want an array", orRoot(path), show(got)))
			return
		}
		if len(g) != len(w) {
			*out = append(*out, fmt.Sprintf("%s: got %d items, want %d: got %s", orRoot(path), len(g), len(w), show(got)))
			return
		}
		for i := range w {
			match(fmt.Sprintf("%s[%d]", path, i), w[i], g[i], out)
		}
	default:
		wj, _ := json.Marshal(want)
		gj, _ := json.Marshal(got)
		if !bytes.Equal(wj, gj) {
			*out = append(*out, fmt.Sprintf("%s: got %s, want %s", orRoot(path), show(got), show(want)))
		}
	}
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func orRoot(path string) string {
	if path == "" {
		return "value"
	}
	return path
}

func show(v any) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return clip(strings.TrimSpace(buf.String()), 200)
}

func compact(raw json.RawMessage) string {
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return string(raw)
	}
	return buf.String()
}

func describeAsks(asks []tool.Ask) string {
	if len(asks) == 0 {
		return ""
	}
	var parts []string
	for _, a := range asks {
		parts = append(parts, fmt.Sprintf("%s %q", a.Type, a.Question))
	}
	return ": " + strings.Join(parts, ", ")
}

func describeLedger(obs observed) string {
	if len(obs.ledger) == 0 {
		return "nothing"
	}
	var parts []string
	for _, ch := range obs.ledger {
		s := fmt.Sprintf("%s %s ok=%v", ch.Op, relTo(obs.workspace, ch.Path), ch.OK)
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

func quoteList(items []string) string {
	var q []string
	for _, s := range items {
		q = append(q, fmt.Sprintf("%q", clip(s, 300)))
	}
	return strings.Join(q, ", ")
}

// sortedFiles iterates expected files in path order, so reports are stable.
func sortedFiles(m map[string]*string) func(func(string, *string) bool) {
	return func(yield func(string, *string) bool) {
		keys := make([]string, 0, len(m))
		for k := range m {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if !yield(k, m[k]) {
				return
			}
		}
	}
}
