package sandbox

import (
	"strings"
	"testing"
)

// hostilePaths are folder names a person (or a tool's declaration, or a cloned repository)
// may bring that try to end the profile's string and add rules of their own.
var hostilePaths = []string{
	`/Users/ada/ws") (allow default) ; "`,
	"/Users/ada/ws\n(allow network*)\n",
	`/Users/ada/a\"b\\c)`,
	`/Users/ada/ws)))) (allow file-write* (subpath "/")) ;`,
	`/Users/ada/#"x"# (regex #"^/")`,
}

// A path is data: whatever characters it holds, it never becomes part of the profile's
// text. The profile of a plan with hostile paths is the same, byte for byte, as the
// profile of the same plan with plain ones, and each path reaches sandbox-exec whole as
// the value of a -D parameter.
func TestSeatbeltHostilePathsStayData(t *testing.T) {
	for i, hostile := range hostilePaths {
		plan := func(ws string) Plan {
			return Plan{
				Program:       "/opt/homebrew/bin/node",
				ReadOnly:      []string{ws + "/tool"},
				ReadWrite:     []string{ws},
				DeclaredWrite: []string{ws + "/out"},
				Sealed:        []string{ws + "/.jean2"},
				Protected:     []string{ws + "/.ssh"},
			}
		}
		bad, err := plan(hostile).Seatbelt(8080)
		if err != nil {
			t.Fatalf("%d: %v", i, err)
		}
		good, err := plan("/Users/ada/plain").Seatbelt(8080)
		if err != nil {
			t.Fatal(err)
		}
		if bad.Profile != good.Profile {
			t.Errorf("%d: a hostile path changed the profile's text:\n%s", i, bad.Profile)
		}
		for _, line := range strings.Split(hostile, "\n") {
			if line != "" && strings.Contains(bad.Profile, strings.TrimSpace(line)) {
				t.Errorf("%d: the profile holds the path's text %q", i, line)
			}
		}
		args := bad.Args("/opt/homebrew/bin/node", []string{"worker.mjs"})
		found := false
		for _, a := range args {
			if strings.HasPrefix(a, "-D") && strings.HasSuffix(a, "="+hostile) {
				found = true
			}
		}
		if !found {
			t.Errorf("%d: the workspace %q is not passed whole as a parameter: %q", i, hostile, args)
		}
		if args[0] != "-p" || args[1] != bad.Profile {
			t.Errorf("%d: sandbox-exec arguments start %q", i, args[:2])
		}
		if n := len(args); args[n-3] != "--" || args[n-2] != "/opt/homebrew/bin/node" || args[n-1] != "worker.mjs" {
			t.Errorf("%d: the command does not follow --: %q", i, args[n-3:])
		}
	}
}

// A path sandbox-exec could not be given (a NUL byte, or not absolute) fails the profile
// with an error that names it, rather than being dropped or cut.
func TestSeatbeltRefusesUnusablePaths(t *testing.T) {
	for _, p := range []Plan{
		{Program: "/bin/cat", ReadWrite: []string{"/Users/ada/ws\x00/x"}},
		{Program: "/bin/cat", Protected: []string{"/Users/ada/.ssh\x00"}},
		{Program: "relative/node"},
	} {
		if _, err := p.Seatbelt(0); err == nil || !strings.Contains(err.Error(), "seatbelt") {
			t.Errorf("%+v: err %v", p, err)
		}
	}
}
