package install

import (
	"archive/tar"
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// Archives are untrusted: every escape is refused before anything reaches the tools folder,
// and nothing is written outside the scratch space.
func TestMaliciousArchivesRefused(t *testing.T) {
	e := newEnv(t, envOptions{limits: Limits{MaxFiles: 50, MaxUnpacked: 64 << 10}})
	ctx := context.Background()
	tool := files("", greetTool("1.0.0"))
	with := func(extra ...entry) []entry { return append(slices.Clone(tool), extra...) }
	many := func(n int) []entry {
		var out []entry
		for i := range n {
			out = append(out, entry{name: "f/" + strings.Repeat("x", 1+i%7) + string(rune('a'+i%26)) + "-" + string(rune('a'+i/26%26)), body: "x"})
		}
		return out
	}
	cases := []struct {
		name    string
		archive []byte
		want    string
	}{
		{"dot-dot entry", tarGz(t, with(entry{name: "../evil.txt", body: "x"})), `climbs out of the archive with ".."`},
		{"dot-dot inside", tarGz(t, with(entry{name: "lib/../../evil.txt", body: "x"})), `".."`},
		{"absolute path", tarGz(t, with(entry{name: "/tmp/evil.txt", body: "x"})), "absolute path"},
		{"symlink absolute", tarGz(t, with(entry{name: "passwd", typeflag: tar.TypeSymlink, link: "/etc/passwd"})), "points to the absolute path /etc/passwd"},
		{"symlink climbing", tarGz(t, with(entry{name: "lib/up", typeflag: tar.TypeSymlink, link: "../../.."})), "points outside the tool"},
		// Each link alone stays inside; together they climb out. Writing through the first
		// is confined by os.Root, and the final walk resolves the chain.
		{"symlink chain", tarGz(t, with(entry{name: "a", typeflag: tar.TypeSymlink, link: "."}, entry{name: "a/b", typeflag: tar.TypeSymlink, link: "../x"})), "outside"},
		{"write through symlink", tarGz(t, with(entry{name: "a", typeflag: tar.TypeSymlink, link: "."}, entry{name: "a/b", typeflag: tar.TypeSymlink, link: ".."}, entry{name: "b/evil.txt", body: "x"})), "escapes"},
		{"hard link out", tarGz(t, with(entry{name: "shadow", typeflag: tar.TypeLink, link: "/etc/shadow"})), "hard link shadow"},
		{"hard link climbing", tarGz(t, with(entry{name: "h", typeflag: tar.TypeLink, link: "../x"})), "hard link h"},
		{"device file", tarGz(t, with(entry{name: "dev", typeflag: tar.TypeChar})), "device file"},
		{"fifo", tarGz(t, with(entry{name: "pipe", typeflag: tar.TypeFifo})), "named pipe"},
		{"duplicate file", tarGz(t, with(entry{name: "tool.ts", body: "again"})), "appears twice"},
		{"too many files", tarGz(t, with(many(60)...)), "more than 50 files"},
		{"too many bytes", tarGz(t, with(entry{name: "big.bin", body: strings.Repeat("0", 70<<10)})), "limit of 65536 bytes"},
		{"zip dot-dot", zipFile(t, with(entry{name: "../evil.txt", body: "x"})), `".."`},
		{"zip backslash dot-dot", zipFile(t, with(entry{name: `..\evil.txt`, body: "x"})), `".."`},
		{"zip absolute", zipFile(t, with(entry{name: "/evil.txt", body: "x"})), "absolute path"},
		{"zip symlink out", zipFile(t, with(entry{name: "out", typeflag: tar.TypeSymlink, link: "../../etc"})), "points outside the tool"},
		{"zip bomb", zipFile(t, with(entry{name: "big.bin", body: strings.Repeat("0", 1<<20)})), "limit of 65536 bytes"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := e.in.Install(ctx, e.file("evil.tgz", c.archive), InstallOptions{Name: "evil"})
			ie := installError(t, err)
			if ie.Stage != StageUnpack || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("stage %s, error: %v; want unpack and %q", ie.Stage, err, c.want)
			}
			if got := e.toolsListing(); len(got) != 0 {
				t.Errorf("tools folder holds %v", got)
			}
			for _, p := range []string{filepath.Join(e.scratch, "evil.txt"), filepath.Join(e.layout.Home, "evil.txt"), filepath.Join(e.layout.Home, "x"), filepath.Join(e.layout.Tools, "evil.txt")} {
				if _, err := os.Lstat(p); err == nil {
					t.Errorf("%s was written", p)
				}
			}
		})
	}
}

// Links that stay inside, pax global headers (git archive), macOS resource forks and a
// plain .tar are all accepted.
func TestBenignArchiveFeatures(t *testing.T) {
	e := newEnv(t, envOptions{})
	entries := append([]entry{
		{name: "pax_global_header", typeflag: tar.TypeXGlobalHeader},
		{name: "greet/", typeflag: tar.TypeDir},
		{name: "greet/lib/", typeflag: tar.TypeDir},
		{name: "greet/lib/data.txt", body: "data"},
		{name: "greet/lib/link.txt", typeflag: tar.TypeSymlink, link: "data.txt"},
		{name: "greet/top.txt", typeflag: tar.TypeSymlink, link: "lib/../lib/data.txt"},
		{name: "greet/copy.txt", typeflag: tar.TypeLink, link: "greet/lib/data.txt"},
		{name: "greet/run.sh", body: "#!/bin/sh\n", mode: 0o4755},
	}, files("greet/", greetTool("1.0.0"))...)
	var plainTar bytes.Buffer
	tw := tar.NewWriter(&plainTar)
	for _, en := range files("", namedTool("plain", "1.0.0")) {
		_ = tw.WriteHeader(&tar.Header{Name: en.name, Mode: 0o644, Size: int64(len(en.body)), Typeflag: tar.TypeReg})
		_, _ = tw.Write([]byte(en.body))
	}
	_ = tw.Close()
	zipEntries := append([]entry{{name: "__MACOSX/._tool.ts", body: "resource fork"}}, files("", namedTool("mac", "1.0.0"))...)

	res := e.mustInstall(e.file("greet.tgz", tarGz(t, entries)), InstallOptions{})
	dst := res.Folder
	for rel, want := range map[string]string{"lib/link.txt": "data", "top.txt": "data", "copy.txt": "data"} {
		if data, err := os.ReadFile(filepath.Join(dst, rel)); err != nil || string(data) != want {
			t.Errorf("%s: %q %v", rel, data, err)
		}
	}
	if st, err := os.Lstat(filepath.Join(dst, "copy.txt")); err != nil || !st.Mode().IsRegular() {
		t.Errorf("hard link is not a plain copy: %v", err)
	}
	if st, _ := os.Stat(filepath.Join(dst, "run.sh")); st == nil || st.Mode()&os.ModeSetuid != 0 || st.Mode().Perm() != 0o755 {
		t.Errorf("run.sh mode %v: setuid must be dropped, execute kept", st.Mode())
	}
	if res := e.mustInstall(e.file("plain.tar", plainTar.Bytes()), InstallOptions{Name: "plain"}); res.Version != "1.0.0" {
		t.Errorf("plain tar: %+v", res)
	}
	res = e.mustInstall(e.file("mac.zip", zipFile(t, zipEntries)), InstallOptions{Name: "mac"})
	if _, err := os.Stat(filepath.Join(res.Folder, "__MACOSX")); err == nil {
		t.Error("__MACOSX was unpacked")
	}
}

func TestCleanEntryName(t *testing.T) {
	for in, want := range map[string]string{"a/b": "a/b", "./a//b/": "a/b", ".": "", "./": "", "a/./b": "a/b"} {
		if got, err := cleanEntryName(in); err != nil || got != want {
			t.Errorf("%q → %q %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"../a", "a/../../b", "/a", `\a`, "C:/a", "a/..", "a\x00b", `a\..\b`} {
		if _, err := cleanEntryName(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
}
