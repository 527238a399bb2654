package loader

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A local dependency must lie in the tool's own folder, however it is named: the installer
// reads it (and a confined installer is granted it). Nothing is installed otherwise.
func TestLocalDependencyOutsideFolderRefused(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, root, map[string]string{"outside/pkg/package.json": `{"name": "pkg", "version": "1.0.0"}`})
	cases := map[string]struct {
		pkg   string
		files map[string]string
		links map[string]string
		want  string // "" when the folder installs
	}{
		"file-root":         {pkg: `{"optionalDependencies": {"root": "file:/"}}`, want: `dependency "root" (file:/) is outside the tool folder`},
		"file-url":          {pkg: `{"dependencies": {"u": "file:///etc"}}`, want: `dependency "u" (file:///etc)`},
		"file-up":           {pkg: `{"dependencies": {"up": "file:../../outside/pkg"}}`, want: `dependency "up" (file:../../outside/pkg)`},
		"bare-up":           {pkg: `{"dependencies": {"up": "../../outside/pkg"}}`, want: `dependency "up" (../../outside/pkg)`},
		"absolute":          {pkg: `{"dependencies": {"abs": "/etc"}}`, want: `dependency "abs" (/etc)`},
		"home":              {pkg: `{"dependencies": {"h": "~/.ssh"}}`, want: `dependency "h" (~/.ssh)`},
		"link":              {pkg: `{"dependencies": {"l": "link:/etc"}}`, want: `dependency "l" (link:/etc)`},
		"git-file":          {pkg: `{"dependencies": {"g": "git+file:///srv/repo.git#main"}}`, want: `dependency "g" (git+file:///srv/repo.git#main)`},
		"alias":             {pkg: `{"dependencies": {"a": "npm:other@file:../../outside/pkg"}}`, want: `dependency "a"`},
		"symlink-out":       {pkg: `{"dependencies": {"s": "file:./vendor/pkg"}}`, links: map[string]string{"vendor/pkg": "OUT/pkg"}, want: `dependency "s" (file:./vendor/pkg)`},
		"override":          {pkg: `{"dependencies": {"ok": "1.0.0"}, "overrides": {"ok": {"deep": "file:/"}}}`, want: `override "deep" (file:/)`},
		"package-lock":      {pkg: `{"dependencies": {"x": "1.0.0"}}`, files: map[string]string{"package-lock.json": `{"lockfileVersion": 3, "packages": {"": {}, "node_modules/x": {"version": "1.0.0", "resolved": "file:../../outside/pkg"}}}`}, want: `package-lock.json installs "file:../../outside/pkg"`},
		"package-lock-link": {pkg: `{"dependencies": {"x": "1.0.0"}}`, files: map[string]string{"package-lock.json": `{"lockfileVersion": 3, "packages": {"": {}, "node_modules/x": {"resolved": "../../outside/pkg", "link": true}, "../../outside/pkg": {"version": "1.0.0"}}}`}, want: `package-lock.json installs "../../outside/pkg"`},
		"inside":            {pkg: `{"dependencies": {"v": "file:./vendor/pkg", "t": "./vendor/t.tgz", "r": "^1.0.0"}}`, files: map[string]string{"vendor/pkg/package.json": `{"name": "v"}`, "vendor/t.tgz": "x"}},
		"inside-lock":       {pkg: `{"dependencies": {"v": "file:./vendor/pkg"}}`, files: map[string]string{"vendor/pkg/package.json": `{"name": "v"}`, "package-lock.json": `{"lockfileVersion": 3, "packages": {"": {}, "node_modules/v": {"resolved": "vendor/pkg", "link": true}, "vendor/pkg": {"name": "v"}}}`}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			ran := filepath.Join(t.TempDir(), "ran")
			npm := fakeInstaller(t, "touch "+ran+"\nmkdir -p node_modules\n")
			l := New(Options{CacheDir: t.TempDir(), Runtimes: Runtimes{NPM: npm}})
			dir := filepath.Join(root, "tools", name)
			files := map[string]string{"tool.ts": "export const definition = { name: 'x' };\n", "package.json": c.pkg}
			for k, v := range c.files {
				files[k] = v
			}
			writeFiles(t, dir, files)
			for link, target := range c.links {
				p := filepath.Join(dir, filepath.FromSlash(link))
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(strings.ReplaceAll(target, "OUT", filepath.Join(root, "outside")), p); err != nil {
					t.Fatal(err)
				}
			}
			_, err := l.Load(context.Background(), Inspect(dir), LoadOptions{})
			_, statErr := os.Stat(ran)
			if c.want == "" {
				if err != nil || statErr != nil {
					t.Fatalf("load: %v; installer ran: %v", err, statErr == nil)
				}
				return
			}
			var le *Error
			if !errors.As(err, &le) || le.Stage != StageInstall || !strings.Contains(le.Msg, c.want) {
				t.Fatalf("err = %v; want an install error holding %s", err, c.want)
			}
			if statErr == nil {
				t.Errorf("the installer ran")
			}
		})
	}
}

// argsInstaller is a fake npm that records its arguments (one run a line) and its npm
// configuration, and makes node_modules.
func argsInstaller(t *testing.T) (npm, argsFile, npmrcCopy string) {
	t.Helper()
	d := t.TempDir()
	argsFile, npmrcCopy = filepath.Join(d, "args"), filepath.Join(d, "npmrc")
	npm = fakeInstaller(t, `echo "$@" >> `+argsFile+`
cp "$NPM_CONFIG_USERCONFIG" `+npmrcCopy+`
echo "HOME=$HOME" >> `+npmrcCopy+`
mkdir -p node_modules
`)
	return npm, argsFile, npmrcCopy
}

func lastLine(t *testing.T, p string) string {
	t.Helper()
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	return lines[len(lines)-1]
}

// Install scripts never run unless the folder declares it needs them and the approval
// says yes for its dependency set; the approval's key follows the dependency set, not the
// folder's place or its code.
func TestInstallScriptsRunOnlyWhenDeclaredAndApproved(t *testing.T) {
	npm, argsFile, _ := argsInstaller(t)
	approved := map[string]bool{}
	var asked []string
	l := New(Options{CacheDir: t.TempDir(), Runtimes: Runtimes{NPM: npm}, InstallScripts: func(f Folder, key string) bool {
		asked = append(asked, key)
		return approved[key]
	}})
	root := t.TempDir()
	plain := filepath.Join(root, "plain")
	writeFiles(t, plain, map[string]string{"tool.ts": "export const x = 1;\n", "package.json": `{"dependencies": {"left-pad": "1.3.0"}}`})
	b, err := l.Load(context.Background(), Inspect(plain), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := lastLine(t, argsFile); !strings.Contains(got, "--ignore-scripts") || b.InstallScripts != nil || len(asked) != 0 {
		t.Fatalf("undeclared: args %q, scripts %+v, asked %v", got, b.InstallScripts, asked)
	}

	declared := filepath.Join(root, "declared")
	writeFiles(t, declared, map[string]string{
		"tool.ts":                 "export const x = 1;\n",
		"package.json":            `{"dependencies": {"left-pad": "1.3.0", "v": "file:./vendor/v"}, "jean2": {"installScripts": true}}`,
		"vendor/v/package.json":   `{"name": "v", "scripts": {"postinstall": "node x.js"}}`,
		"vendor/v/x.js":           "1;\n",
		"vendor/v/node_modules/z": "not part of the package's content",
	})
	b, err = l.Load(context.Background(), Inspect(declared), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := lastLine(t, argsFile); !strings.Contains(got, "--ignore-scripts") || b.InstallScripts == nil || b.InstallScripts.Approved || b.InstallScripts.Key == "" {
		t.Fatalf("declared, not approved: args %q, scripts %+v", got, b.InstallScripts)
	}
	if want := "left-pad,v"; strings.Join(b.InstallScripts.Dependencies, ",") != want {
		t.Errorf("dependencies %v", b.InstallScripts.Dependencies)
	}
	key, unapproved := b.InstallScripts.Key, b.Hash

	approved[key] = true
	b, err = l.Load(context.Background(), Inspect(declared), LoadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := lastLine(t, argsFile); strings.Contains(got, "--ignore-scripts") || !b.InstallScripts.Approved {
		t.Fatalf("approved: args %q, scripts %+v", got, b.InstallScripts)
	}
	if b.Hash == unapproved {
		t.Error("installing with scripts did not change the version's hash")
	}

	// The same content elsewhere (a staged install) has the same key; the tool's code does
	// not count, a local package's content does.
	moved := filepath.Join(root, "moved", "declared")
	if err := os.MkdirAll(filepath.Dir(moved), 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("cp", "-r", declared, moved).CombinedOutput(); err != nil {
		t.Fatalf("cp: %v %s", err, out)
	}
	writeFiles(t, moved, map[string]string{"tool.ts": "export const x = 2;\n"})
	if k := mustKey(t, moved); k != key {
		t.Errorf("the key changed with the folder's place or code")
	}
	writeFiles(t, moved, map[string]string{"vendor/v/x.js": "2;\n"})
	if k := mustKey(t, moved); k == key {
		t.Errorf("the key did not change with a local package's content")
	}
}

func mustKey(t *testing.T, dir string) string {
	t.Helper()
	f := Inspect(dir)
	if f.Err != nil {
		t.Fatal(f.Err)
	}
	k, err := installScriptsKey(f, installerNPM)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// The installer reads a configuration of its own, not ~/.npmrc: the registry lines, the
// login lines only when no install script runs, nothing else; and its HOME is its own.
func TestInstallerGetsOnlyRegistryLinesOfNPMRC(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	t.Setenv("JEAN2_TEST_NPM_TOKEN", "tok-from-env")
	writeFiles(t, home, map[string]string{".npmrc": "registry=https://mirror.example/\n@acme:registry=https://npm.acme.example/\n//npm.acme.example/:_authToken=${JEAN2_TEST_NPM_TOKEN}\n//mirror.example/:_authToken=plain-token\nscript-shell=/tmp/evil.sh\nnode-options=--require /tmp/evil.js\n; comment\n"})
	npm, _, npmrc := argsInstaller(t)
	l := New(Options{CacheDir: t.TempDir(), Runtimes: Runtimes{NPM: npm}, InstallScripts: func(Folder, string) bool { return true }})
	for _, scripts := range []bool{false, true} {
		dir := filepath.Join(t.TempDir(), "t")
		pkg := `{"dependencies": {"left-pad": "1.3.0"}}`
		if scripts {
			pkg = `{"dependencies": {"left-pad": "1.3.0"}, "jean2": {"installScripts": true}}`
		}
		writeFiles(t, dir, map[string]string{"tool.ts": "export const x = 1;\n", "package.json": pkg})
		if _, err := l.Load(context.Background(), Inspect(dir), LoadOptions{}); err != nil {
			t.Fatal(err)
		}
		raw, err := os.ReadFile(npmrc)
		if err != nil {
			t.Fatal(err)
		}
		got := string(raw)
		want := "registry=https://mirror.example/\n@acme:registry=https://npm.acme.example/\n"
		if !scripts {
			want += "//npm.acme.example/:_authToken=tok-from-env\n//mirror.example/:_authToken=plain-token\n"
		}
		gotConf, gotHome, _ := strings.Cut(got, "HOME=")
		if gotConf != want {
			t.Errorf("scripts %v: the installer's npmrc is\n%s\nwant\n%s", scripts, gotConf, want)
		}
		if h := strings.TrimSpace(gotHome); h == home || h == "" || strings.HasPrefix(h, home+"/") {
			t.Errorf("the installer's HOME is %q", h)
		}
	}
	if left, _ := filepath.Glob(filepath.Join(l.opts.CacheDir, "install-private", "*")); len(left) != 0 {
		t.Errorf("the installer's private folders were left: %v", left)
	}
}

// An install that takes too long is stopped, with an error that says so, and leaves no
// process behind; an install that ends leaves none of its processes either.
func TestInstallTimeLimitAndLeftovers(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child")
	slow := fakeInstaller(t, "sleep 61 &\necho $! > "+pidFile+"\nsleep 60\n")
	l := New(Options{CacheDir: t.TempDir(), Runtimes: Runtimes{NPM: slow}, InstallTimeout: 300 * time.Millisecond})
	_, err := l.Load(context.Background(), Inspect(depFolder(t)), LoadOptions{})
	var le *Error
	if !errors.As(err, &le) || le.Stage != StageInstall || le.Msg != "npm install did not finish within 300ms (the install time limit) and was stopped" {
		t.Fatalf("err = %v", err)
	}
	waitGone(t, readPid(t, pidFile))

	quick := fakeInstaller(t, "sleep 61 &\necho $! > "+pidFile+"\nmkdir -p node_modules\nexit 0\n")
	l = New(Options{CacheDir: t.TempDir(), Runtimes: Runtimes{NPM: quick}})
	if _, err := l.Load(context.Background(), Inspect(depFolder(t)), LoadOptions{}); err != nil {
		t.Fatal(err)
	}
	waitGone(t, readPid(t, pidFile))
}

func readPid(t *testing.T, p string) int {
	t.Helper()
	raw, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

// waitGone fails unless pid is gone (or a zombie) within a few seconds.
func waitGone(t *testing.T, pid int) {
	t.Helper()
	for i := 0; i < 250; i++ {
		stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil || syscall.Kill(pid, 0) != nil {
			return
		}
		if j := strings.LastIndexByte(string(stat), ')'); j > 0 && j+2 < len(stat) && stat[j+2] == 'Z' {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the installer's child %d outlived it", pid)
}
