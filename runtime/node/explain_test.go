package node

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// explainModule is worker.mjs as a module a test can import: without its last two
// statements (which start the egress shim and read the protocol's descriptors) and with
// explainError exported beside a setter of what initialize would have set.
func explainModule(t *testing.T) string {
	t.Helper()
	src := string(script)
	const tail = "installEgress();\ninstallEgressBun();\nsetupTransport();\n"
	if !strings.HasSuffix(src, tail) {
		t.Fatalf("worker.mjs no longer ends with %q: update this test", tail)
	}
	src = strings.TrimSuffix(src, tail) + `
export { explainError, hostError };
export function setSandbox(name, tool) { sandboxName = name; sandboxed = true; toolName = tool; }
`
	p := filepath.Join(t.TempDir(), "worker-under-test.mjs")
	if err := os.WriteFile(p, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// How a refusal is worded under each sandbox: Landlock's EACCES and Seatbelt's EPERM
// ("operation not permitted") are both explained as jean2's sandbox's, with the declaration
// that would allow them, and under Seatbelt the error says that macOS words it so; the
// EPERMs the system gives for its own reasons (unlink of a folder) and errors that are no
// refusal are left as they are. Runs in Node and Bun, as the worker does.
func TestExplainErrorWording(t *testing.T) {
	mod := explainModule(t)
	dir := t.TempDir()
	runner := filepath.Join(dir, "run.mjs")
	code := `
import { explainError, hostError, setSandbox } from ` + jsString(mod) + `;
const dir = process.argv[2];
const e = (code, syscall, path, message) => Object.assign(new Error(message), { code, syscall, path });
const cases = {};
const run = (name, sandbox, err, call, p, write) => {
  setSandbox(sandbox, 'weather');
  explainError(err, call, p, write);
  cases[name] = { message: err.message, explained: err.jean2Sandbox === true };
};
run('seatbelt read', 'seatbelt', e('EPERM', 'open', '/Users/ada/secret.txt', "EPERM: operation not permitted, open '/Users/ada/secret.txt'"), 'readFile', '/Users/ada/secret.txt', false);
run('seatbelt write', 'seatbelt', e('EPERM', 'open', '/Users/ada/out.txt', "EPERM: operation not permitted, open '/Users/ada/out.txt'"), 'writeFile', '/Users/ada/out.txt', true);
run('seatbelt spawn', 'seatbelt', e('EPERM', 'spawn /bin/ls', '/bin/ls', 'spawn /bin/ls EPERM'), 'spawn', '', undefined);
run('seatbelt unlink of a folder', 'seatbelt', e('EPERM', 'unlink', dir, "EPERM: operation not permitted, unlink '" + dir + "'"), 'unlink', dir, true);
run('seatbelt missing file', 'seatbelt', e('ENOENT', 'open', '/nope', "ENOENT: no such file or directory, open '/nope'"), 'readFile', '/nope', false);
run('landlock read', 'landlock', e('EACCES', 'open', '/srv/data.txt', "EACCES: permission denied, open '/srv/data.txt'"), 'readFile', '/srv/data.txt', false);
run('landlock read of a path with a backtick', 'landlock', e('EACCES', 'open', '/home/ada/` + "`" + `x/f', "EACCES: permission denied"), 'readFile', '/home/ada/` + "`" + `x/f', false);
{
  // ctx.fs's refusal comes from the host, which says why: nothing to add, no grant to offer.
  setSandbox('landlock', 'weather');
  const err = hostError({ code: -32002, message: "EPERM: readFile '/etc/passwd': a blocked system path; no permission can grant access to it", data: { code: 'EPERM', path: '/etc/passwd' } });
  explainError(err, 'readFile', '/etc/passwd', false);
  cases['host refusal'] = { message: err.message, explained: err.jean2Sandbox === true };
}
run('landlock read of a relative path', 'landlock', e('EACCES', 'open', 'notes.txt', "EACCES: permission denied, open 'notes.txt'"), 'readFile', 'notes.txt', false);
process.stdout.write(JSON.stringify(cases));
`
	if err := os.WriteFile(runner, []byte(code), 0o644); err != nil {
		t.Fatal(err)
	}
	forEachRuntime(t, func(t *testing.T, rt Runtime) {
		cmd := exec.Command(rt.Path, runner, dir)
		cmd.Dir = dir // a relative path is the working folder's
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("%v: %s", err, errText(err))
		}
		var got map[string]struct {
			Message   string
			Explained bool
		}
		if err := json.Unmarshal(out, &got); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		const seatbelt = `macOS's Seatbelt, which confines the tool, says "operation not permitted" for it`
		const approve = "approves it with `jean2 tools approve weather`"
		want := []struct {
			name      string
			explained bool
			holds     []string
			lacks     []string
		}{
			{"seatbelt read", true, []string{"EPERM: operation not permitted, open '/Users/ada/secret.txt' (refused by jean2's sandbox: a tool's own code reads only",
				seatbelt, `declares {"read":["/Users/ada/secret.txt"]}`, approve, "or read through ctx.fs", "--grant read=/Users/ada/secret.txt"}, nil},
			{"seatbelt write", true, []string{"(refused by jean2's sandbox: a tool's own code writes only", seatbelt, `declares {"write":["/Users/ada/out.txt"]}`}, nil},
			{"seatbelt spawn", true, []string{"(refused by jean2's sandbox: a tool's own code starts no process", seatbelt, `declares {"childProcess": true}`, "--grant childProcess"}, nil},
			{"seatbelt unlink of a folder", false, nil, []string{"refused by jean2's sandbox"}},
			{"seatbelt missing file", false, nil, []string{"refused by jean2's sandbox"}},
			{"landlock read", true, []string{"(refused by jean2's sandbox: a tool's own code reads only", `declares {"read":["/srv/data.txt"]}`}, []string{"Seatbelt", "macOS"}},
			// A backtick would end the quoted command early, offering /home/ada/: no grant
			// is offered, the declaration still is.
			{"host refusal", false, []string{"a blocked system path"}, []string{"refused by jean2's sandbox", "--grant"}},
			{"landlock read of a relative path", true, []string{"--grant read=" + filepath.Join(mustRealDir(t, dir), "notes.txt") + "`"}, nil},
			{"landlock read of a path with a backtick", true, []string{"to allow it, the tool declares", `declares {"read":["/home/ada/` + "`" + `x/f"]}`}, []string{"--grant"}},
		}
		for _, w := range want {
			g, ok := got[w.name]
			if !ok {
				t.Errorf("%s: no result", w.name)
				continue
			}
			if g.Explained != w.explained {
				t.Errorf("%s: explained %v, want %v: %s", w.name, g.Explained, w.explained, g.Message)
			}
			for _, s := range w.holds {
				if !strings.Contains(g.Message, s) {
					t.Errorf("%s: %q lacks %q", w.name, g.Message, s)
				}
			}
			for _, s := range w.lacks {
				if strings.Contains(g.Message, s) {
					t.Errorf("%s: %q holds %q", w.name, g.Message, s)
				}
			}
		}
	})
}

func jsString(s string) string { b, _ := json.Marshal(s); return string(b) }

func errText(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}

func mustRealDir(t *testing.T, dir string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
