package main

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/jean2/jean2/install"
)

// searchHit is one tool of the index as `tools search --json` prints it.
type searchHit struct {
	Name        string `json:"name"`
	Description string `json:"description"`
	Category    string `json:"category,omitempty"`
	Version     string `json:"version,omitempty"` // "" when the index gives none
	Recommended bool   `json:"recommended,omitempty"`
	Installed   bool   `json:"installed"`
}

// toolsSearch lists the index's tools matching the query, marking the installed ones.
func toolsSearch(ctx context.Context, e env, args []string) error {
	fs := newFlags("tools search", e)
	asJSON := fs.Bool("json", false, "print JSON")
	onlyInstalled := fs.Bool("installed", false, "only the tools that are installed")
	indexFlag := fs.String("index", "", "the tool index to search")
	words, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	pp := newProgressPrinter(e.stderr, false)
	in, _, closeFn, err := newInstaller(ctx, e, *indexFlag, false, pp.event)
	if err != nil {
		return err
	}
	defer closeFn()
	idx, err := in.LoadIndex(ctx)
	if err != nil {
		return err
	}
	installed, err := in.Installed()
	if err != nil {
		return err
	}
	var hits []searchHit
	for _, t := range idx.Search(strings.Join(words, " ")) {
		h := searchHit{Name: t.Name, Description: t.Description, Category: t.Category, Version: t.Version,
			Recommended: t.Recommended, Installed: slices.Contains(installed, t.Name)}
		if h.Version == "latest" {
			h.Version = ""
		}
		if !*onlyInstalled || h.Installed {
			hits = append(hits, h)
		}
	}
	if *asJSON {
		if hits == nil {
			hits = []searchHit{}
		}
		return writeJSON(e.stdout, hits)
	}
	return printSearch(e, idx, hits, len(words) > 0)
}

func printSearch(e env, idx *install.Index, hits []searchHit, queried bool) error {
	if len(hits) == 0 {
		if queried {
			fmt.Fprintf(e.stdout, "No tool of the index %s matches.\n", idx.Location)
		} else {
			fmt.Fprintf(e.stdout, "The index %s lists no tools.\n", idx.Location)
		}
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tVERSION\tSTATUS\tDESCRIPTION")
	installed := 0
	for _, h := range hits {
		status := "available"
		if h.Installed {
			status, installed = "installed", installed+1
		}
		if h.Recommended {
			status += ", recommended"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", h.Name, orDash(h.Version), status, oneLine(h.Description, 80))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "%d shown, %d installed; install one with: jean2 tools install NAME\n", len(hits), installed)
	return nil
}

// oneLine is s on one line, cut to at most n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n-1]) + "…"
	}
	return s
}
