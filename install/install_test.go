package install

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestInstallFromFolder(t *testing.T) {
	e := newEnv(t, envOptions{})
	src := e.folder("my-greeter", greetTool("1.0.0"))
	// Left behind by the copy: dependencies are installed afresh, history is no part of a tool.
	writeTree(t, src, map[string]string{"node_modules/junk/index.js": "x", ".git/HEAD": "ref", "lib/util.ts": "export const x = 1;\n"})
	if err := os.Symlink("lib/util.ts", filepath.Join(src, "util-link.ts")); err != nil {
		t.Fatal(err)
	}

	res := e.mustInstall(src, InstallOptions{})
	if res.Name != "greet" || res.ToolName != "greet" || res.Version != "1.0.0" || res.Kind != KindFolder || res.Replaced != "" {
		t.Fatalf("result %+v", res)
	}
	dst := filepath.Join(e.layout.Tools, "greet")
	if res.Folder != dst {
		t.Fatalf("folder %s; want %s", res.Folder, dst)
	}
	for _, gone := range []string{"node_modules/junk", ".git"} {
		if _, err := os.Stat(filepath.Join(dst, gone)); err == nil {
			t.Errorf("%s was copied", gone)
		}
	}
	if target, err := os.Readlink(filepath.Join(dst, "util-link.ts")); err != nil || target != "lib/util.ts" {
		t.Errorf("inner link: %q %v", target, err)
	}
	rec, err := ReadRecord(dst)
	if err != nil || rec == nil || rec.Kind != KindFolder || rec.Source != src || rec.Name != "greet" || rec.InstalledAt.IsZero() {
		t.Fatalf("record %+v %v", rec, err)
	}
	if got := e.toolsListing(); !slices.Equal(got, []string{"greet"}) {
		t.Fatalf("tools folder holds %v", got)
	}
	if v := e.servingVersion("greet"); v != "1.0.0" {
		t.Fatalf("serving %s", v)
	}
	// Progress named the stages in order.
	var stages []Stage
	for _, ev := range e.events.all() {
		if !ev.Note && (len(stages) == 0 || stages[len(stages)-1] != ev.Stage) {
			stages = append(stages, ev.Stage)
		}
	}
	if want := []Stage{StageCopy, StageBundle, StageLoad, StageSwap}; !slices.Equal(stages, want) {
		t.Errorf("stages %v; want %v", stages, want)
	}

	// A second install replaces it, and says what it replaced; the folder may be given
	// through a link.
	src2 := e.folder("greet-2", greetTool("1.1.0"))
	if err := os.Symlink(src2, filepath.Join(e.scratch, "greet-link")); err != nil {
		t.Fatal(err)
	}
	res = e.mustInstall(filepath.Join(e.scratch, "greet-link"), InstallOptions{})
	if res.Replaced != "1.0.0" || res.Version != "1.1.0" {
		t.Fatalf("reinstall %+v", res)
	}
	if v := e.servingVersion("greet"); v != "1.1.0" {
		t.Fatalf("serving %s", v)
	}
	if got := e.toolsListing(); !slices.Equal(got, []string{"greet"}) {
		t.Fatalf("tools folder holds %v after the swap", got)
	}

	// A second folder defining the same tool name would break the first: refused.
	twin := e.folder("twin", greetTool("9.0.0"))
	_, err = e.in.Install(context.Background(), twin, InstallOptions{Name: "greet-twin"})
	if ie := installError(t, err); ie.Stage != StageLoad || !strings.Contains(err.Error(), `calls itself "greet", and the installed folder greet already defines that name`) {
		t.Fatalf("twin: %v", err)
	}
	if got := e.toolsListing(); !slices.Equal(got, []string{"greet"}) {
		t.Fatalf("tools folder holds %v after the twin", got)
	}

	// A symlink out of a local folder is refused: a tool folder must hold what it uses.
	bad := e.folder("linker", greetTool("1.0.0"))
	if err := os.Symlink("/etc/passwd", filepath.Join(bad, "passwd")); err != nil {
		t.Fatal(err)
	}
	_, err = e.in.Install(context.Background(), bad, InstallOptions{Name: "linker"})
	if ie := installError(t, err); ie.Stage != StageCopy || !strings.Contains(ie.Error(), "/etc/passwd") {
		t.Fatalf("symlink out: %v", err)
	}
	// The tools folder itself cannot be installed.
	_, err = e.in.Install(context.Background(), e.layout.Home, InstallOptions{Name: "home"})
	if ie := installError(t, err); ie.Stage != StageCopy || !strings.Contains(ie.Error(), "holds the tools folder") {
		t.Fatalf("home: %v", err)
	}
}

func TestInstallArchives(t *testing.T) {
	e := newEnv(t, envOptions{})
	srv := newServer(t)
	ctx := context.Background()

	// A .tar.gz whose files sit under one top folder is unpacked from that folder; the name
	// comes from package.json ("@jean2/tool-greet" → greet).
	tgz := tarGz(t, append([]entry{{name: "greet-1.0.0/", typeflag: tar.TypeDir}}, files("greet-1.0.0/", greetTool("1.0.0"))...))
	res := e.mustInstall(e.file("dl/whatever.tgz", tgz), InstallOptions{})
	if res.Name != "greet" || res.Kind != KindArchive || res.SHA256 != sum(tgz) || res.Verified != "" {
		t.Fatalf("tgz: %+v", res)
	}
	if _, err := os.Stat(filepath.Join(e.layout.Tools, "greet", "tool.ts")); err != nil {
		t.Fatalf("top folder not stripped: %v", err)
	}
	if !strings.Contains(e.events.text(), "nothing was verified") {
		t.Errorf("no note that nothing was verified:\n%s", e.events.text())
	}

	// A .zip with files at its root; no package.json name, so the archive's base name
	// without its version is the tool's name.
	zfiles := namedTool("hello", "2.0.0")
	zfiles["package.json"] = `{"version": "2.0.0", "type": "module"}`
	z := zipFile(t, files("", zfiles))
	res = e.mustInstall(e.file("hello-2.0.0.zip", z), InstallOptions{})
	if res.Name != "hello" || res.Version != "2.0.0" {
		t.Fatalf("zip: %+v", res)
	}

	// A URL, with a .sha256 beside it in sha256sum's format.
	e.events.reset()
	urlTgz := tarGz(t, files("", namedTool("greet-url", "1.0.0")))
	url := srv.put("/pkgs/greet.tar.gz", urlTgz)
	srv.put("/pkgs/greet.tar.gz.sha256", []byte(sum(urlTgz)+"  greet.tar.gz\n"))
	res = e.mustInstall(url, InstallOptions{Name: "greet-url"})
	if res.Name != "greet-url" || res.Kind != KindURL || res.Verified != url+".sha256" {
		t.Fatalf("url: %+v", res)
	}
	var sawBytes bool
	for _, ev := range e.events.all() {
		if ev.Stage == StageDownload && ev.Done == int64(len(urlTgz)) && ev.Total == int64(len(urlTgz)) {
			sawBytes = true
		}
	}
	if !sawBytes || !strings.Contains(e.events.text(), "verified against") {
		t.Errorf("download progress:\n%s", e.events.text())
	}

	// A .sha256 that does not match refuses the install and names both digests.
	bad := strings.Repeat("ab", 32)
	srv.put("/pkgs/other.tar.gz", tgz)
	srv.put("/pkgs/other.tar.gz.sha256", []byte(bad+"\n"))
	_, err := e.in.Install(ctx, srv.URL+"/pkgs/other.tar.gz", InstallOptions{Name: "other"})
	ie := installError(t, err)
	if ie.Stage != StageVerify || !strings.Contains(err.Error(), bad) || !strings.Contains(err.Error(), sum(tgz)) {
		t.Fatalf("bad sidecar: %v", err)
	}
	// So does a local one.
	local := e.file("sums/greet.tar.gz", tgz)
	e.file("sums/greet.tar.gz.sha256", []byte(bad))
	_, err = e.in.Install(ctx, local, InstallOptions{Name: "other"})
	if ie := installError(t, err); ie.Stage != StageVerify || !strings.Contains(err.Error(), "mismatch") {
		t.Fatalf("bad local sidecar: %v", err)
	}
	// A garbled .sha256 is refused too, rather than skipped.
	e.file("sums/greet.tar.gz.sha256", []byte("not-a-digest greet.tar.gz"))
	_, err = e.in.Install(ctx, local, InstallOptions{Name: "other"})
	if ie := installError(t, err); ie.Stage != StageVerify || !strings.Contains(err.Error(), "64 hex digits") {
		t.Fatalf("garbled sidecar: %v", err)
	}
	if _, err := os.Stat(filepath.Join(e.layout.Tools, "other")); err == nil {
		t.Fatal("a refused archive was installed")
	}
	if v := e.servingVersion("greet"); v != "1.0.0" {
		t.Fatalf("serving %s", v)
	}
}

func TestInstallFromIndex(t *testing.T) {
	srv := newServer(t)
	v1 := tarGz(t, files("", greetTool("1.0.0")))
	srv.put("/r/greet/1.0.0.tar.gz", v1)
	// A tool without a version is fetched as "latest".
	srv.put("/r/hello/latest.tar.gz", tarGz(t, files("", namedTool("hello", "0.1.0"))))
	tamperedSum := strings.Repeat("0", 64)
	srv.put("/r/tampered/1.0.0.tar.gz", v1)
	srv.put("/index.json", indexJSON(t, srv.URL+"/r",
		IndexTool{Name: "greet", Description: "d", Version: "1.0.0", SHA256: sum(v1), Recommended: true},
		IndexTool{Name: "hello", Description: "d"},
		IndexTool{Name: "tampered", Description: "d", Version: "1.0.0", SHA256: tamperedSum},
	))
	e := newEnv(t, envOptions{index: srv.URL + "/index.json"})
	ctx := context.Background()

	res := e.mustInstall("greet", InstallOptions{})
	if res.Kind != KindIndex || res.Verified != "index" || res.SHA256 != sum(v1) {
		t.Fatalf("greet: %+v", res)
	}
	rec, _ := ReadRecord(res.Folder)
	if rec == nil || rec.Kind != KindIndex || rec.IndexVersion != "1.0.0" || rec.Index != srv.URL+"/index.json" || rec.SHA256 != sum(v1) {
		t.Fatalf("record %+v", rec)
	}
	if res := e.mustInstall("hello", InstallOptions{}); res.Version != "0.1.0" || srv.hitCount("/r/hello/latest.tar.gz") != 1 {
		t.Fatalf("hello: %+v", res)
	}

	// The index's sha256 is checked and a mismatch names both digests.
	_, err := e.in.Install(ctx, "tampered", InstallOptions{})
	if ie := installError(t, err); ie.Stage != StageVerify || !strings.Contains(err.Error(), tamperedSum) || !strings.Contains(err.Error(), sum(v1)) || !strings.Contains(err.Error(), "index") {
		t.Fatalf("tampered: %v", err)
	}
	// An unknown name lists what there is.
	_, err = e.in.Install(ctx, "nope", InstallOptions{})
	if ie := installError(t, err); ie.Stage != StageResolve || !strings.Contains(err.Error(), "greet, hello, tampered") {
		t.Fatalf("unknown: %v", err)
	}
	// A path that does not exist is not looked up in the index.
	_, err = e.in.Install(ctx, "./greet", InstallOptions{})
	if err == nil || !strings.Contains(err.Error(), "no such file or folder") {
		t.Fatalf("missing path: %v", err)
	}

	// A version 2 index is refused with a clear error.
	srv.put("/index.json", []byte(`{"version": 2, "tools": []}`))
	_, err = e.in.Install(ctx, "greet", InstallOptions{})
	if err == nil || !strings.Contains(err.Error(), "format version 2") || !strings.Contains(err.Error(), "version 3") {
		t.Fatalf("v2 index: %v", err)
	}

	// Without an index, a bare name says how to configure one.
	plain := newEnv(t, envOptions{})
	_, err = plain.in.Install(ctx, "greet", InstallOptions{})
	if err == nil || !strings.Contains(err.Error(), "JEAN2_TOOL_REGISTRY_URL") {
		t.Fatalf("no index: %v", err)
	}
}

// Every stage that can fail leaves the installed version in place and serving, and the
// error names the stage.
func TestFailedInstallKeepsOldVersion(t *testing.T) {
	srv := newServer(t)
	e := newEnv(t, envOptions{})
	ctx := context.Background()
	e.mustInstall(e.folder("greet-v1", greetTool("1.0.0")), InstallOptions{})
	if v := e.servingVersion("greet"); v != "1.0.0" {
		t.Fatalf("serving %s", v)
	}
	v2 := greetTool("2.0.0")
	good := tarGz(t, files("", v2))

	srv.handle("/cut.tar.gz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100000")
		_, _ = w.Write(good[:len(good)/2])
		// Returning with fewer bytes than promised cuts the connection.
	})
	srv.put("/bad-sum.tar.gz", good)
	srv.put("/bad-sum.tar.gz.sha256", []byte(strings.Repeat("1", 64)))
	// A checksum file that cannot be read is a download failure, not a verified mismatch.
	srv.put("/sum-500.tar.gz", good)
	srv.handle("/sum-500.tar.gz.sha256", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "down", http.StatusInternalServerError) })

	with := func(change map[string]string) []byte {
		f := greetTool("2.0.0")
		for k, v := range change {
			f[k] = v
		}
		return tarGz(t, files("", f))
	}
	cases := []struct {
		name  string
		spec  func() string
		stage Stage
		want  string
		npm   bool
	}{
		{"download 404", func() string { return srv.URL + "/missing.tar.gz" }, StageDownload, "404", false},
		{"connection cut", func() string { return srv.URL + "/cut.tar.gz" }, StageDownload, "GET", false},
		{"bad checksum", func() string { return srv.URL + "/bad-sum.tar.gz" }, StageVerify, "mismatch", false},
		{"checksum unreadable", func() string { return srv.URL + "/sum-500.tar.gz" }, StageDownload, "sum-500.tar.gz.sha256", false},
		{"corrupt archive", func() string { return e.file("corrupt.tar.gz", good[:len(good)-40]) }, StageUnpack, "", false},
		{"not an archive", func() string { return e.file("text.tar.gz", []byte("hello, not an archive")) }, StageUnpack, "not a .tar.gz", false},
		{"no entry file", func() string { return e.file("empty.tar.gz", tarGz(t, files("", map[string]string{"README.md": "x"}))) }, StageCheck, "no tool.ts", false},
		{"missing npm package", func() string {
			return e.file("dep.tar.gz", with(map[string]string{"package.json": `{"name": "greet", "version": "2.0.0", "type": "module", "dependencies": {"@jean2-test-nonexistent/pkg": "1.0.0"}}`}))
		}, StageInstallDeps, "@jean2-test-nonexistent/pkg", true},
		{"syntax error", func() string {
			return e.file("syntax.tar.gz", with(map[string]string{"tool.ts": "export const definition = {;\n"}))
		}, StageBundle, "tool.ts:1", false},
		{"throws at load", func() string {
			return e.file("throws.tar.gz", with(map[string]string{"tool.ts": "throw new Error('broken at import');\nexport const definition = {};\n"}))
		}, StageLoad, "broken at import", false},
		{"invalid definition", func() string {
			return e.file("nodef.tar.gz", with(map[string]string{"tool.ts": "export const definition = { name: 'greet' };\nexport async function execute() { return { success: true }; }\n"}))
		}, StageLoad, "", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.npm && testing.Short() {
				t.Skip("asks the npm registry")
			}
			_, err := e.in.Install(ctx, c.spec(), InstallOptions{Name: "greet"})
			t.Log(err)
			ie := installError(t, err)
			if ie.Stage != c.stage || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("stage %q; want %q; error: %v", ie.Stage, c.stage, err)
			}
			if ie.Kept != "1.0.0" || !strings.Contains(err.Error(), "the installed 1.0.0 is untouched") {
				t.Errorf("error does not say the old version stays: %v", err)
			}
			if got := e.toolsListing(); !slices.Equal(got, []string{"greet"}) {
				t.Errorf("tools folder holds %v", got)
			}
			if v := e.servingVersion("greet"); v != "1.0.0" {
				t.Errorf("serving %s after a failed install", v)
			}
		})
	}
}

func TestLeftoversOfAnInterruptedInstall(t *testing.T) {
	e := newEnv(t, envOptions{})
	src := e.folder("greet", greetTool("1.0.0"))
	tools := e.layout.Tools

	// Killed between the two renames of a swap: only .previous holds the tool. The next
	// install puts it back before going on, so a failure then still leaves it installed.
	writeTree(t, filepath.Join(tools, "greet.previous"), greetTool("0.9.0"))
	writeTree(t, filepath.Join(tools, "greet.staging"), map[string]string{"tool.ts": "half"})
	broken := e.folder("broken", map[string]string{"tool.ts": "export const definition = {;\n", "package.json": `{"name":"greet"}`})
	_, err := e.in.Install(context.Background(), broken, InstallOptions{})
	if ie := installError(t, err); ie.Stage != StageBundle || ie.Kept != "0.9.0" {
		t.Fatalf("%v", err)
	}
	if got := e.toolsListing(); !slices.Equal(got, []string{"greet"}) {
		t.Fatalf("tools folder holds %v", got)
	}
	if v := e.servingVersion("greet"); v != "0.9.0" {
		t.Fatalf("serving %s", v)
	}
	if !strings.Contains(e.events.text(), "put back greet from greet.previous") || !strings.Contains(e.events.text(), "removed greet.staging") {
		t.Errorf("notes:\n%s", e.events.text())
	}

	// Killed after the swap: .previous is stale beside the live folder and is removed.
	writeTree(t, filepath.Join(tools, "greet.previous"), greetTool("0.8.0"))
	e.mustInstall(src, InstallOptions{})
	if got := e.toolsListing(); !slices.Equal(got, []string{"greet"}) {
		t.Fatalf("tools folder holds %v", got)
	}
	if v := e.servingVersion("greet"); v != "1.0.0" {
		t.Fatalf("serving %s", v)
	}
}

func TestSwapTwoStepPutsTheOldVersionBack(t *testing.T) {
	dir := t.TempDir()
	dst, staging, previous := filepath.Join(dir, "t"), filepath.Join(dir, "t.staging"), filepath.Join(dir, "t.previous")
	writeTree(t, dst, map[string]string{"VERSION": "1.0.0"})
	// No staging folder: the second rename fails, and the old folder must be back.
	err := swapTwoStep(staging, dst, previous)
	if err == nil || !strings.Contains(err.Error(), "the old one is back") {
		t.Fatalf("%v", err)
	}
	if data, err := os.ReadFile(filepath.Join(dst, "VERSION")); err != nil || string(data) != "1.0.0" {
		t.Fatalf("old version not back: %q %v", data, err)
	}
	if _, err := os.Stat(previous); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("previous left: %v", err)
	}
	// The normal path: new in place, old removed.
	writeTree(t, staging, map[string]string{"VERSION": "2.0.0"})
	if err := swapTwoStep(staging, dst, previous); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(filepath.Join(dst, "VERSION")); string(data) != "2.0.0" {
		t.Fatalf("swap: %q", data)
	}
	for _, p := range []string{staging, previous} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s left: %v", p, err)
		}
	}
	// The exchange path (Linux): same outcome.
	writeTree(t, staging, map[string]string{"VERSION": "3.0.0"})
	if err := swapIn(staging, dst, previous); err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(filepath.Join(dst, "VERSION")); string(data) != "3.0.0" {
		t.Fatalf("swapIn: %q", data)
	}
	for _, p := range []string{staging, previous} {
		if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s left: %v", p, err)
		}
	}
}

func TestRemove(t *testing.T) {
	e := newEnv(t, envOptions{})
	ctx := context.Background()
	e.mustInstall(e.folder("greet", greetTool("1.0.0")), InstallOptions{})
	e.mustInstall(e.folder("other", namedTool("other", "1.0.0")), InstallOptions{Name: "other"})
	// A tool folder that is a link to a development folder: removing it drops the link only.
	dev := e.folder("dev-tool", namedTool("dev", "1.0.0"))
	if err := os.Symlink(dev, filepath.Join(e.layout.Tools, "dev")); err != nil {
		t.Fatal(err)
	}

	err := e.in.Remove(ctx, "nope", false)
	var nie *NotInstalledError
	if !errors.As(err, &nie) || !slices.Equal(nie.Installed, []string{"dev", "greet", "other"}) || !strings.Contains(err.Error(), "dev, greet, other") {
		t.Fatalf("unknown: %v", err)
	}
	for _, bad := range []string{"../scratch", "greet.staging", ".", ""} {
		if err := e.in.Remove(ctx, bad, false); !errors.As(err, &nie) {
			t.Errorf("remove %q: %v", bad, err)
		}
	}
	if err := e.in.Remove(ctx, "greet", false); err != nil {
		t.Fatal(err)
	}
	if err := e.in.Remove(ctx, "dev", false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(dev, "tool.ts")); err != nil {
		t.Fatalf("removing a link deleted its target: %v", err)
	}
	if got := e.toolsListing(); !slices.Equal(got, []string{"other"}) {
		t.Fatalf("tools folder holds %v", got)
	}
	// A folder a person wrote (no install record) is their only copy: refused unless own.
	mine := filepath.Join(e.layout.Tools, "mine")
	if err := os.MkdirAll(mine, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(mine, "tool.ts"), []byte("// my work"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := e.in.Remove(ctx, "mine", false); err == nil || !strings.Contains(err.Error(), "--force") {
		t.Fatalf("removing a folder jean2 did not install: %v", err)
	}
	if _, err := os.Stat(filepath.Join(mine, "tool.ts")); err != nil {
		t.Fatalf("the refused removal deleted it: %v", err)
	}
	if err := e.in.Remove(ctx, "mine", true); err != nil {
		t.Fatal(err)
	}
	if names, _ := e.in.Installed(); !slices.Equal(names, []string{"other"}) {
		t.Fatalf("installed %v", names)
	}
}

func TestOutdatedAndUpdate(t *testing.T) {
	srv := newServer(t)
	v1 := tarGz(t, files("", greetTool("1.0.0")))
	srv.put("/r/greet/1.0.0.tar.gz", v1)
	srv.put("/r/hello/1.0.0-rc.1.tar.gz", tarGz(t, files("", namedTool("hello", "1.0.0-rc.1"))))
	srv.put("/index.json", indexJSON(t, srv.URL+"/r",
		IndexTool{Name: "greet", Description: "d", Version: "1.0.0", SHA256: sum(v1)},
		IndexTool{Name: "hello", Description: "d", Version: "1.0.0-rc.1"},
	))
	e := newEnv(t, envOptions{index: srv.URL + "/index.json"})
	ctx := context.Background()
	e.mustInstall("greet", InstallOptions{})
	e.mustInstall("hello", InstallOptions{})
	// A tool from a folder is not tracked.
	e.mustInstall(e.folder("local", namedTool("local", "0.0.1")), InstallOptions{Name: "local"})

	st, err := e.in.Outdated(ctx)
	if err != nil || len(st) != 2 || st[0].Status != StatusUpToDate || st[1].Status != StatusUpToDate {
		t.Fatalf("outdated %+v %v", st, err)
	}

	// The index moves on: greet 1.1.0; hello's release follows its release candidate.
	v11 := tarGz(t, files("", greetTool("1.1.0")))
	srv.put("/r/greet/1.1.0.tar.gz", v11)
	srv.put("/r/hello/1.0.0.tar.gz", tarGz(t, files("", namedTool("hello", "1.0.0"))))
	srv.put("/index.json", indexJSON(t, srv.URL+"/r",
		IndexTool{Name: "greet", Description: "d", Version: "1.1.0", SHA256: sum(v11)},
		IndexTool{Name: "hello", Description: "d", Version: "1.0.0"},
	))
	st, err = e.in.Outdated(ctx)
	if err != nil || len(st) != 2 {
		t.Fatalf("%+v %v", st, err)
	}
	for i, want := range []VersionStatus{
		{Name: "greet", Installed: "1.0.0", Latest: "1.1.0", Status: StatusOutdated, Outdated: true},
		{Name: "hello", Installed: "1.0.0-rc.1", Latest: "1.0.0", Status: StatusOutdated, Outdated: true},
	} {
		got := st[i]
		got.Index = ""
		if got != want {
			t.Errorf("status %+v; want %+v", got, want)
		}
	}

	// update with a name updates that one only.
	out, err := e.in.Update(ctx, []string{"hello"})
	if err != nil || len(out) != 1 || !out[0].Updated || out[0].Result.Version != "1.0.0" {
		t.Fatalf("update hello: %+v %v", out, err)
	}
	if v := e.servingVersion("greet"); v != "1.0.0" {
		t.Fatalf("greet was updated too: %s", v)
	}
	// update with no name updates every outdated index tool.
	out, err = e.in.Update(ctx, nil)
	if err != nil || len(out) != 2 || !out[0].Updated || out[1].Updated {
		t.Fatalf("update all: %+v %v", out, err)
	}
	if v := e.servingVersion("greet"); v != "1.1.0" {
		t.Fatalf("serving %s", v)
	}
	rec, _ := ReadRecord(filepath.Join(e.layout.Tools, "greet"))
	if rec.IndexVersion != "1.1.0" || rec.SHA256 != sum(v11) {
		t.Fatalf("record %+v", rec)
	}
	// Nothing left to do.
	out, _ = e.in.Update(ctx, nil)
	for _, o := range out {
		if o.Updated || o.Status != StatusUpToDate {
			t.Errorf("second update: %+v", o)
		}
	}
	// A folder-installed tool or an unknown one cannot be updated from the index.
	if _, err := e.in.Update(ctx, []string{"local"}); err == nil || !strings.Contains(err.Error(), "not from the tool index") {
		t.Errorf("local: %v", err)
	}
	var nie *NotInstalledError
	if _, err := e.in.Update(ctx, []string{"nope"}); !errors.As(err, &nie) {
		t.Errorf("nope: %v", err)
	}
	// A failed update keeps the old version and reports it in the outcome.
	srv.put("/index.json", indexJSON(t, srv.URL+"/r", IndexTool{Name: "greet", Description: "d", Version: "9.0.0"}))
	out, err = e.in.Update(ctx, []string{"greet"})
	if err != nil || len(out) != 1 || out[0].Updated || !strings.Contains(out[0].Error, "404") {
		t.Fatalf("failed update: %+v %v", out, err)
	}
	if v := e.servingVersion("greet"); v != "1.1.0" {
		t.Fatalf("serving %s", v)
	}
}

func TestMissingEnvReportedByNameOnly(t *testing.T) {
	const secret = "s3cr3t-value-never-printed"
	srv := newServer(t)
	f := greetTool("1.0.0")
	f["tool.ts"] = strings.Replace(f["tool.ts"], "description: 'says hello',", "description: 'says hello', env: ['API_KEY', 'REGION', 'SET_IN_DOTENV'],", 1)
	archive := tarGz(t, files("", f))
	srv.put("/r/greet/1.0.0.tar.gz", archive)
	srv.put("/index.json", indexJSON(t, srv.URL+"/r", IndexTool{Name: "greet", Description: "d", Version: "1.0.0", EnvVars: []EnvVar{
		{Name: "REGION", Required: true},
		{Name: "API_KEY", Required: true, Sensitive: true},
		{Name: "EXTRA_TOKEN", Sensitive: true},
		{Name: "FROM_SERVER"},
	}}))
	e := newEnv(t, envOptions{index: srv.URL + "/index.json", serverEnv: []string{"FROM_SERVER=" + secret}})
	if err := os.WriteFile(e.layout.DotEnv, []byte("SET_IN_DOTENV="+secret+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	res := e.mustInstall("greet", InstallOptions{})
	var missing []string
	for _, v := range res.MissingEnv() {
		missing = append(missing, v.Name)
	}
	if want := []string{"API_KEY", "REGION", "EXTRA_TOKEN"}; !slices.Equal(missing, want) {
		t.Fatalf("missing %v; want %v (required first)", missing, want)
	}
	all, _ := json.Marshal(res)
	if strings.Contains(string(all), secret) || strings.Contains(e.events.text(), secret) {
		t.Fatal("a value was reported")
	}
	for _, v := range res.Env {
		if (v.Name == "SET_IN_DOTENV" || v.Name == "FROM_SERVER") && !v.Set {
			t.Errorf("%s has a value and is reported missing", v.Name)
		}
	}
}

func TestPickName(t *testing.T) {
	in := &Installer{}
	dir := t.TempDir()
	cases := []struct {
		o    origin
		pkg  string
		want string
	}{
		{origin{location: "/x/y.tar.gz", kind: KindArchive}, `{"name": "@jean2/tool-web-search"}`, "web-search"},
		{origin{location: "/x/y.tar.gz", kind: KindArchive}, `{"name": "jean2-tool-fetch"}`, "fetch"},
		{origin{location: "/x/y.tar.gz", kind: KindArchive}, `{"name": "Not A Name"}`, "y"},
		{origin{location: "/x/word-count-v1.2.3-rc.1.tgz", kind: KindArchive}, ``, "word-count"},
		{origin{location: "http://127.0.0.1/a/b/hello.zip?x=1", kind: KindURL}, ``, "hello"},
		{origin{location: "/x/my.tool", kind: KindFolder}, ``, "my.tool"},
		{origin{location: "http://127.0.0.1/r/greet/1.0.0.tar.gz", kind: KindURL}, ``, "greet"},
		{origin{location: "/r/greet/latest.tar.gz", kind: KindArchive}, ``, "greet"},
		{origin{location: "/x/y.tgz", kind: KindArchive, name: "forced"}, `{"name": "other"}`, "forced"},
	}
	for _, c := range cases {
		_ = os.Remove(filepath.Join(dir, "package.json"))
		if c.pkg != "" {
			writeTree(t, dir, map[string]string{"package.json": c.pkg})
		}
		got, err := in.pickName(c.o, dir)
		if err != nil || got != c.want {
			t.Errorf("%+v %s: %q %v; want %q", c.o, c.pkg, got, err, c.want)
		}
	}
	_ = os.Remove(filepath.Join(dir, "package.json"))
	if _, err := in.pickName(origin{location: "/1.0.0.tar.gz", kind: KindArchive}, dir); err == nil || !strings.Contains(err.Error(), "--name") {
		t.Errorf("no name: %v", err)
	}
	for _, bad := range []string{"", ".hidden", "a/b", "x.staging", "x.previous", "a..b", "-x", strings.Repeat("a", 101), "a b"} {
		if CheckName(bad) == nil {
			t.Errorf("CheckName(%q) accepted", bad)
		}
	}
}
