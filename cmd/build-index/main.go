// Command build-index packs the repository's tool catalogue into the files a release
// publishes: one reproducible NAME-VERSION.tar.gz per tool, its .sha256, and tools.json, the
// version 3 index `jean2 tools install` reads (install.DefaultIndexURL points at the
// latest release's copy). See docs/tools.md, "The tool index".
//
//	go run ./cmd/build-index -out dist/tools -base-url https://github.com/jean2/jean2/releases/download/v1.2.3
package main

import (
	"flag"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/jean2/jean2/install"
)

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "build-index:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("build-index", flag.ContinueOnError)
	catalogue := fs.String("catalogue", "catalogue", "the catalogue folder (manifest.json and one folder per tool)")
	out := fs.String("out", "dist/tools", "where to write the archives, their .sha256 files and "+install.IndexFileName)
	baseURL := fs.String("base-url", "", "where the archives will be published; empty: beside the index")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	opts := install.BuildOptions{Catalogue: *catalogue, Out: *out, BaseURL: *baseURL}
	// SOURCE_DATE_EPOCH, the reproducible-builds convention, sets the entries' time.
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		secs, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return fmt.Errorf("SOURCE_DATE_EPOCH %q is not a number of seconds", s)
		}
		opts.ModTime = time.Unix(secs, 0).UTC()
	}
	idx, err := install.BuildIndex(opts)
	if err != nil {
		return err
	}
	for _, t := range idx.Tools {
		fmt.Printf("%s %s  sha256 %s\n", t.Name, t.Version, t.SHA256)
	}
	fmt.Printf("wrote %s (%d tools)\n", idx.Location, len(idx.Tools))
	return nil
}
