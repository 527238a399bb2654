package loader

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// fakeInstaller writes an executable shell script and returns its path.
func fakeInstaller(t *testing.T, script string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "npm")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+script), 0o755); err != nil {
		t.Fatal(err)
	}
	return p
}

func depFolder(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "dep-tool")
	writeFiles(t, dir, map[string]string{
		"tool.ts":      "export const definition = { name: 'x' };\n",
		"package.json": `{"dependencies": {"left-pad": "1.3.0"}}`,
	})
	return dir
}

// The installer sees PATH, HOME and its cache, not the host's secrets.
func TestInstallerEnvironmentIsMinimal(t *testing.T) {
	t.Setenv("OPENAI_API_KEY", "sk-secret")
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-secret")
	t.Setenv("JEAN2_SOMETHING", "host-only")
	envFile := filepath.Join(t.TempDir(), "env")
	npm := fakeInstaller(t, "env > "+envFile+"\necho \"$@\" >> "+envFile+"\nmkdir -p node_modules/left-pad\n")
	cache := t.TempDir()
	l := New(Options{CacheDir: cache, Runtimes: Runtimes{NPM: npm}, InstallEnv: []string{"npm_config_registry=https://mirror.example/"}})
	if _, err := l.Load(context.Background(), Inspect(depFolder(t)), LoadOptions{}); err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(envFile)
	if err != nil {
		t.Fatal(err)
	}
	env := string(raw)
	for _, secret := range []string{"sk-secret", "sk-ant-secret", "host-only"} {
		if strings.Contains(env, secret) {
			t.Errorf("the installer saw %q:\n%s", secret, env)
		}
	}
	for _, want := range []string{
		"PATH=" + filepath.Dir(npm) + ":",
		"HOME=",
		"npm_config_cache=" + filepath.Join(cache, "npm-cache"),
		"npm_config_registry=https://mirror.example/",
		"install --no-audit --no-fund --omit=dev",
	} {
		if !strings.Contains(env, want) {
			t.Errorf("installer environment lacks %q:\n%s", want, env)
		}
	}
}

func TestInstallerFailureKeepsItsMessage(t *testing.T) {
	npm := fakeInstaller(t, "echo 'npm error code ERESOLVE' >&2\necho 'npm error could not resolve left-pad@1.3.0' >&2\nexit 1\n")
	l := New(Options{CacheDir: t.TempDir(), Runtimes: Runtimes{NPM: npm}})
	_, err := l.Load(context.Background(), Inspect(depFolder(t)), LoadOptions{})
	var le *Error
	if !errors.As(err, &le) || le.Stage != StageInstall {
		t.Fatalf("err = %v", err)
	}
	want := "dep-tool: install: npm install failed (exit status 1): npm error code ERESOLVE\nnpm error could not resolve left-pad@1.3.0"
	if le.Error() != want {
		t.Errorf("\n got %q\nwant %q", le.Error(), want)
	}
}

// Stopping a load stops the installer and every process it started.
func TestInstallStopsWithContext(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child")
	npm := fakeInstaller(t, "sleep 60 &\necho $! > "+pidFile+"\nwait\n")
	l := New(Options{CacheDir: t.TempDir(), Runtimes: Runtimes{NPM: npm}})
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := l.Load(ctx, Inspect(depFolder(t)), LoadOptions{})
	var le *Error
	if !errors.As(err, &le) || le.Stage != StageInstall || !strings.Contains(le.Msg, "install stopped") {
		t.Fatalf("err = %v", err)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("stopping took %v", took)
	}
	raw, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	var pid int
	for _, c := range strings.TrimSpace(string(raw)) {
		pid = pid*10 + int(c-'0')
	}
	deadline := time.Now().Add(5 * time.Second)
	for syscall.Kill(pid, 0) == nil {
		if time.Now().After(deadline) {
			t.Fatalf("the installer's child %d outlived it", pid)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
