package tooltest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"

	"github.com/jean2/jean2/internal/fsutil"
	"github.com/jean2/jean2/tool"
)

// check compares what a case observed with what it expects and returns each difference,
// and the snapshot it wrote when updating.
func check(dir string, c Case, obs observed, res tool.Result, opts Options) (problems []string, updated string) {
	r := &report{}
	e := c.Expect
	r.outcome(e, res)
	if len(e.Result) > 0 {
		r.addAll(partial("result", e.Result, res.Result))
	}
	if len(e.Visualization) > 0 {
		var mode string
		if json.Unmarshal(e.Visualization, &mode) == nil && mode == "snapshot" {
			p, u := snapshot(dir, c, res.Visualization, opts.Update, r.add)
			if u {
				updated = p
			}
		} else {
			r.addAll(partial("visualization", e.Visualization, res.Visualization))
		}
	}
	if e.asksSet {
		r.asks(e.Asks, obs.asks)
	}
	r.files(e.Files, obs.workspace)
	if len(e.Ledger) > 0 {
		r.ledger(e.Ledger, obs)
	}
	if e.refusedSet {
		r.refused(e.Refused, obs.refused)
	}
	if e.LLMCalls != nil && *e.LLMCalls != obs.llmCalls {
		r.add("llmCalls: the tool called the model %d time(s), want %d", obs.llmCalls, *e.LLMCalls)
	}
	for _, m := range obs.llmErrs {
		r.add("llm: %s", m)
	}
	return r.problems, updated
}

// report gathers a case's differences, in the order the expectation lists them.
type report struct {
	problems []string
}

func (r *report) add(format string, args ...any) {
	r.problems = append(r.problems, fmt.Sprintf(format, args...))
}

func (r *report) addAll(diffs []string) {
	for _, d := range diffs {
		r.add("%s", d)
	}
}

// outcome checks success and the error text; an expected error implies a failure unless
// success is given.
func (r *report) outcome(e Expect, res tool.Result) {
	success := true
	if e.Success != nil {
		success = *e.Success
	} else if e.Error != "" {
		success = false
	}
	if res.Success != success {
		if res.Success {
			r.add("success: got true, want false")
		} else {
			r.add("success: got false, want true; the tool failed with: %s", res.Error)
		}
	}
	if e.Error != "" && !strings.Contains(res.Error, e.Error) {
		r.add("error: got %q, want it to contain %q", res.Error, e.Error)
	}
}

// asks checks the number of asks and each one, in order, against its partial expectation.
func (r *report) asks(want []json.RawMessage, got []tool.Ask) {
	if len(want) != len(got) {
		r.add("asks: the tool made %d ask(s), want %d%s", len(got), len(want), describeAsks(got))
	}
	for i := range min(len(want), len(got)) {
		raw, _ := json.Marshal(got[i])
		r.addAll(partial(fmt.Sprintf("asks[%d]", i), want[i], raw))
	}
}

// files checks the workspace's files: a nil expectation means the file must be absent.
func (r *report) files(want map[string]*string, workspace string) {
	for p, want := range sortedFiles(want) {
		data, err := os.ReadFile(filepath.Join(workspace, filepath.FromSlash(p)))
		switch {
		case want == nil && err == nil:
			r.add("files[%q]: the file exists, want it absent", p)
		case want == nil:
		case errors.Is(err, fs.ErrNotExist):
			r.add("files[%q]: the file is absent, want %q", p, clip(*want, 200))
		case err != nil:
			r.add("files[%q]: %v", p, err)
		case string(data) != *want:
			r.add("files[%q]: got %q, want %q", p, clip(string(data), 200), clip(*want, 200))
		}
	}
}

// ledger checks that the expected changes appear in the ledger in order, each after the
// one matched before it, others allowed between them; it reports the first one missing.
func (r *report) ledger(want []json.RawMessage, obs observed) {
	entries := make([]json.RawMessage, len(obs.ledger))
	for i, ch := range obs.ledger {
		ch.Path = relTo(obs.workspace, ch.Path)
		ch.Before = nil
		entries[i], _ = json.Marshal(ch)
	}
	at := 0
	for i, w := range want {
		found := false
		for at < len(entries) {
			ok := len(partial("", w, entries[at])) == 0
			at++
			if ok {
				found = true
				break
			}
		}
		if !found {
			r.add("ledger[%d]: no change %s after the ones matched before; the ledger holds %s", i, compact(w), describeLedger(obs))
			return
		}
	}
}

// refused checks the network refusals: an empty expectation means none; otherwise each
// expected text must be in some refusal.
func (r *report) refused(want, got []string) {
	if len(want) == 0 && len(got) > 0 {
		r.add("refused: want nothing refused, got %s", quoteList(got))
	}
	for _, w := range want {
		if slices.ContainsFunc(got, func(g string) bool { return strings.Contains(g, w) }) {
			continue
		}
		if len(got) == 0 {
			r.add("refused: nothing was refused, want a refusal containing %q", w)
		} else {
			r.add("refused: no refusal contains %q; refused were %s", w, quoteList(got))
		}
	}
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
