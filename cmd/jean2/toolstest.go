package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/jean2/jean2/host"
	"github.com/jean2/jean2/tooltest"
)

// toolsTest runs the cases kept in a tool folder (package tooltest) and reports each.
func toolsTest(ctx context.Context, e env, args []string) error {
	fs := newFlags("tools test", e)
	update := fs.Bool("update", false, "rewrite the golden visualization snapshots")
	match := fs.String("run", "", "run only the cases whose name contains this")
	asJSON := fs.Bool("json", false, "print the report as JSON")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return usagef("tools test takes at most one folder or tool name\n\n%s", toolsSubUsage["test"])
	}
	arg := ""
	if len(pos) == 1 {
		arg = pos[0]
	}
	dir, err := toolFolderArg(e, arg)
	if err != nil {
		return err
	}
	cases, err := tooltest.Load(dir)
	if err != nil {
		return fmt.Errorf("read the test cases: %w", err)
	}
	if len(cases) == 0 {
		return fmt.Errorf("%s has no test cases: write one in %s/%s/NAME.json (see docs/writing-tools.md, \"Testing a tool\")", dir, filepath.Base(dir), tooltest.Dir)
	}
	// Each case gets a host that loads this folder only, with no .env: a test sees the
	// variables its case gives and nothing of the person's. What the host logs about the
	// tool still reaches stderr (JEAN2_LOG), beside the runner's own reading of it.
	scratch, err := os.MkdirTemp("", "jean2-tools-test-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(scratch)
	open := caseHostOpener(e, dir, filepath.Join(scratch, "no.env"))
	results := tooltest.Run(ctx, dir, cases, open, tooltest.Options{Update: *update, Match: *match})
	if len(results) == 0 {
		return fmt.Errorf("no case name contains %q", *match)
	}
	return reportCases(e, results, *asJSON)
}

// caseHostOpener opens a case's host: this folder only, no .env (noEnv is never written),
// the case's variables and the runner's PATH and HOME as the server's environment, and
// the host's log teed to the runner.
func caseHostOpener(e env, dir, noEnv string) tooltest.Opener {
	return func(ctx context.Context, vars map[string]string, log slog.Handler) (*host.Host, error) {
		return openHostTuned(ctx, e, func(o *host.Options) {
			o.Folders = []string{dir}
			o.Layout.DotEnv = noEnv
			o.ServerEnv = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
			for k, v := range vars {
				o.ServerEnv = append(o.ServerEnv, k+"="+v)
			}
			o.Logger = slog.New(teeLog{quietThrows{o.Logger.Handler()}, log})
		})
	}
}

// reportCases prints the cases' outcomes, as JSON or a line each with the problems of the
// failed ones; a failed case ends the command with code 1.
func reportCases(e env, results []tooltest.Outcome, asJSON bool) error {
	failed := 0
	for _, r := range results {
		if !r.Passed {
			failed++
		}
	}
	if asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		enc.SetEscapeHTML(false)
		if err := enc.Encode(results); err != nil {
			return err
		}
	} else {
		for _, r := range results {
			switch {
			case r.Passed && r.Updated != "":
				fmt.Fprintf(e.stdout, "ok    %s (%s): wrote %s\n", r.Case, r.File, r.Updated)
			case r.Passed:
				fmt.Fprintf(e.stdout, "ok    %s (%s)\n", r.Case, r.File)
			default:
				fmt.Fprintf(e.stdout, "FAIL  %s (%s)\n", r.Case, r.File)
				for _, p := range r.Problems {
					fmt.Fprintf(e.stdout, "        %s\n", strings.ReplaceAll(p, "\n", "\n        "))
				}
			}
		}
		fmt.Fprintln(e.stdout, casesSummary(failed, len(results)))
	}
	if failed > 0 {
		return exitError{code: 1}
	}
	return nil
}

// casesSummary is the report's last line, in words that agree with the count.
func casesSummary(failed, total int) string {
	noun := "cases"
	if total == 1 {
		noun = "case"
	}
	switch {
	case failed > 0:
		return fmt.Sprintf("%d of %d %s failed", failed, total, noun)
	case total == 1:
		return "1 case passed"
	}
	return fmt.Sprintf("all %d %s passed", total, noun)
}

// quietThrows leaves out the "threw …" records: a case that expects an error would fill the
// report's stderr with stacks; the result says what was thrown.
type quietThrows struct{ slog.Handler }

func (q quietThrows) Handle(ctx context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, "threw ") || strings.HasPrefix(r.Message, "jean2 sandbox refused: ") {
		return nil
	}
	return q.Handler.Handle(ctx, r)
}

func (q quietThrows) WithAttrs(as []slog.Attr) slog.Handler {
	return quietThrows{q.Handler.WithAttrs(as)}
}

func (q quietThrows) WithGroup(name string) slog.Handler {
	return quietThrows{q.Handler.WithGroup(name)}
}

// teeLog passes each record to both handlers.
type teeLog struct{ a, b slog.Handler }

func (t teeLog) Enabled(ctx context.Context, l slog.Level) bool {
	return t.a.Enabled(ctx, l) || t.b.Enabled(ctx, l)
}

func (t teeLog) Handle(ctx context.Context, r slog.Record) error {
	if t.a.Enabled(ctx, r.Level) {
		_ = t.a.Handle(ctx, r.Clone())
	}
	if t.b.Enabled(ctx, r.Level) {
		_ = t.b.Handle(ctx, r.Clone())
	}
	return nil
}

func (t teeLog) WithAttrs(as []slog.Attr) slog.Handler {
	return teeLog{t.a.WithAttrs(as), t.b.WithAttrs(as)}
}

func (t teeLog) WithGroup(name string) slog.Handler {
	return teeLog{t.a.WithGroup(name), t.b.WithGroup(name)}
}
