// Command tokens measures what a read-file call costs the model in tokens, as JSON (the
// model text before issue 24) and as text (tool.Result.ModelText), with real tokenizers
// (tiktoken's cl100k_base and o200k_base, ranks embedded in github.com/tiktoken-go/tokenizer).
// It reads each file given through the built-in read-file, via host.Invoke:
//
//	cd bench/tokens && go run . ../../host/invoke.go ../../builtin/readfile.go …
//
// It is a module of its own so that jean2 does not depend on the tokenizer.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"

	"github.com/jean2/jean2/builtin"
	"github.com/jean2/jean2/host"
	"github.com/tiktoken-go/tokenizer"
)

func main() {
	if err := run(context.Background(), os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "tokens:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, files []string) error {
	root, err := os.MkdirTemp("", "jean2-tokens-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(root)
	layout, err := host.LayoutFromEnv(func(k string) string {
		if k == "JEAN2_HOME" {
			return filepath.Join(root, "home")
		}
		return ""
	})
	if err != nil {
		return err
	}
	h, err := host.New(ctx, host.Options{Layout: layout, Builtins: builtin.Tools(builtin.Options{}),
		ServerEnv: []string{}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		return err
	}
	defer h.Close(ctx)
	codecs := []tokenizer.Encoding{tokenizer.Cl100kBase, tokenizer.O200kBase}
	fmt.Printf("%-28s %6s %6s | %s\n", "file", "lines", "bytes", "tokens JSON → text (saved), per encoding")
	total := make([][2]int, len(codecs))
	for _, f := range files {
		abs, err := filepath.Abs(f)
		if err != nil {
			return err
		}
		args, _ := json.Marshal(map[string]string{"path": abs})
		out := h.Invoke(ctx, host.Call{Tool: "read-file", Args: args, SessionID: "tokens",
			Workspace: host.Workspace{ID: "w", Path: filepath.Dir(abs)}})
		if !out.Result.Success {
			return fmt.Errorf("read-file %s: %s", f, out.Result.Error)
		}
		var r struct{ LinesReturned int }
		_ = json.Unmarshal(out.Result.Result, &r)
		before, after := string(out.Result.ModelJSON()), out.ModelText
		fmt.Printf("%-28s %6d %6d |", filepath.Base(f), r.LinesReturned, len(before))
		for i, e := range codecs {
			codec, err := tokenizer.Get(e)
			if err != nil {
				return err
			}
			b, _ := codec.Count(before)
			a, _ := codec.Count(after)
			total[i][0] += b
			total[i][1] += a
			fmt.Printf(" %s %d → %d (%.0f%%)", e, b, a, 100*float64(b-a)/float64(b))
		}
		fmt.Println()
	}
	fmt.Printf("%-42s |", "all files")
	for i, e := range codecs {
		fmt.Printf(" %s %d → %d (%.0f%%)", e, total[i][0], total[i][1], 100*float64(total[i][0]-total[i][1])/float64(total[i][0]))
	}
	fmt.Println()
	return nil
}
