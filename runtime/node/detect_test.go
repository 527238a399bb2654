package node

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// fakeRuntime writes an executable that prints version.
func fakeRuntime(t *testing.T, dir, name, version string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\necho "+version+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestDetect(t *testing.T) {
	realBun := bunPath(t)
	empty := t.TempDir()
	old := t.TempDir()
	fakeRuntime(t, old, "node", "v18.19.0")
	fakeRuntime(t, old, "bun", "1.0.30")

	t.Run("default prefers node", func(t *testing.T) {
		rt, err := Detect(DetectOptions{BunPath: realBun})
		if err != nil || rt.Kind != KindNode || !strings.HasPrefix(rt.Version, "20.") || !filepath.IsAbs(rt.Path) {
			t.Fatalf("%+v %v", rt, err)
		}
		if rt.Dir() != filepath.Dir(rt.Path) {
			t.Fatalf("Dir %s", rt.Dir())
		}
	})
	t.Run("bun preferred", func(t *testing.T) {
		rt, err := Detect(DetectOptions{Preference: " Bun ", BunPath: realBun})
		if err != nil || rt.Kind != KindBun || rt.Version != "1.4.5" {
			t.Fatalf("%+v %v", rt, err)
		}
	})
	t.Run("bun when node is missing", func(t *testing.T) {
		rt, err := Detect(DetectOptions{PathEnv: empty, BunPath: realBun})
		if err != nil || rt.Kind != KindBun {
			t.Fatalf("%+v %v", rt, err)
		}
	})
	t.Run("bun when node is too old", func(t *testing.T) {
		rt, err := Detect(DetectOptions{PathEnv: old, BunPath: realBun})
		if err != nil || rt.Kind != KindBun {
			t.Fatalf("%+v %v", rt, err)
		}
	})
	t.Run("too old", func(t *testing.T) {
		_, err := Detect(DetectOptions{Preference: "node", PathEnv: old})
		if err == nil || !strings.Contains(err.Error(), "is version 18.19.0, too old: jean2 needs Node.js ≥ 20.0") {
			t.Fatalf("%v", err)
		}
		_, err = Detect(DetectOptions{Preference: "bun", PathEnv: old})
		if err == nil || !strings.Contains(err.Error(), "is version 1.0.30, too old: jean2 needs Bun ≥ 1.1") {
			t.Fatalf("%v", err)
		}
	})
	t.Run("missing", func(t *testing.T) {
		_, err := Detect(DetectOptions{PathEnv: empty})
		if err == nil || !strings.Contains(err.Error(), "install Node.js ≥ 20.0 (https://nodejs.org) or Bun ≥ 1.1 (https://bun.sh)") {
			t.Fatalf("%v", err)
		}
		_, err = Detect(DetectOptions{Preference: "bun", PathEnv: empty})
		if err == nil || !strings.Contains(err.Error(), "Bun is not installed") || !strings.Contains(err.Error(), "install Bun ≥ 1.1") {
			t.Fatalf("%v", err)
		}
	})
	t.Run("unknown preference", func(t *testing.T) {
		_, err := Detect(DetectOptions{Preference: "deno"})
		if err == nil || !strings.Contains(err.Error(), `use "node" or "bun"`) {
			t.Fatalf("%v", err)
		}
	})
	t.Run("not a version", func(t *testing.T) {
		p := fakeRuntime(t, t.TempDir(), "node", "hello")
		_, err := Detect(DetectOptions{Preference: "node", NodePath: p})
		if err == nil || !strings.Contains(err.Error(), `printed version "hello"`) {
			t.Fatalf("%v", err)
		}
	})
}

func TestWriteScript(t *testing.T) {
	dir := t.TempDir()
	p1, err := WriteScript(dir)
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(dir, "runtime", "worker-"+ScriptHash()+".mjs"); p1 != want {
		t.Fatalf("path %s, want %s", p1, want)
	}
	b, _ := os.ReadFile(p1)
	if !bytes.Equal(b, Script()) {
		t.Fatal("written script differs")
	}
	// A damaged copy is replaced.
	os.WriteFile(p1, []byte("garbage"), 0o644)
	if _, err := WriteScript(dir); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(p1); !bytes.Equal(b, Script()) {
		t.Fatal("damaged script was not rewritten")
	}
	if _, err := WriteScript(""); err == nil {
		t.Fatal("no cache dir must be an error")
	}
}

func TestLauncherArgs(t *testing.T) {
	n := NewLauncher(Runtime{Kind: KindNode, Path: "/usr/bin/node"}, LauncherOptions{CacheDir: "/c", MaxOldSpaceMB: 512})
	script := "/c/runtime/worker-" + ScriptHash() + ".mjs"
	if got := strings.Join(n.Args, " "); got != "--enable-source-maps --no-warnings --max-old-space-size=512 "+script {
		t.Fatalf("node args %q", got)
	}
	b := NewLauncher(Runtime{Kind: KindBun, Path: "/x/bun"}, LauncherOptions{CacheDir: "/c"})
	if got := strings.Join(b.Args, " "); got != "--no-install --no-env-file --config=/dev/null "+script {
		t.Fatalf("bun args %q", got)
	}
	if n.Env == nil || len(n.Env) != 0 {
		t.Fatalf("env must be empty, not inherited: %#v", n.Env)
	}
}
