package sandbox

import (
	"strings"
	"testing"
)

// On macOS, workers get Seatbelt where sandbox-exec is there, in auto and require alike;
// landlock cannot be met; without sandbox-exec auto falls back as on a Linux without
// Landlock and require refuses.
func TestChooseDarwin(t *testing.T) {
	with := Status{OS: "darwin", Launcher: "/jean2", Seatbelt: true}
	without := Status{OS: "darwin", Launcher: "/jean2", SeatbeltError: "/usr/bin/sandbox-exec: no such file or directory"}
	cases := []struct {
		st   Status
		mode Mode
		kind string
		want Mechanism
		err  string
	}{
		{with, ModeAuto, "node", Seatbelt, ""},
		{with, ModeAuto, "bun", Seatbelt, ""},
		{with, ModeAuto, "go", Seatbelt, ""},
		{with, ModeRequire, "go", Seatbelt, ""},
		{with, ModeLandlock, "node", "", "Landlock exists only on Linux"},
		{with, ModeNode, "node", NodePermissions, ""},
		{with, ModeNode, "bun", Unconfined, ""},
		{with, ModeOff, "node", Unconfined, ""},
		{without, ModeAuto, "node", NodePermissions, ""},
		{without, ModeAuto, "bun", Unconfined, ""},
		{without, ModeRequire, "node", "", "no such file"},
	}
	for _, c := range cases {
		st := c.st
		st.Mode = c.mode
		got, err := st.Choose(c.kind)
		if got != c.want || (err != nil) != (c.err != "") || (err != nil && !strings.Contains(err.Error(), c.err)) {
			t.Errorf("%+v %s: got %q %v", st, c.kind, got, err)
		}
	}
	st := with
	st.Mode = ModeAuto
	if s := st.Summary(); !strings.Contains(s, "Seatbelt") || !strings.Contains(s, "localhost") || !strings.Contains(s, ".jean2 read-only") {
		t.Errorf("summary: %s", s)
	}
	st = without
	st.Mode = ModeAuto
	if s := st.Summary(); !strings.Contains(s, "no Seatbelt: /usr/bin/sandbox-exec") {
		t.Errorf("summary without sandbox-exec: %s", s)
	}
}

// On Windows nothing confines a worker: tools run only when the person chose it (off, or
// node for Node's permission model); auto, landlock and require refuse with a message
// that says what to set and recommends WSL.
func TestChooseWindows(t *testing.T) {
	for _, mode := range []Mode{ModeAuto, ModeLandlock, ModeRequire} {
		st := Status{OS: "windows", Mode: mode, Launcher: `C:\jean2.exe`}
		for _, kind := range []string{"node", "bun", "go"} {
			got, err := st.Choose(kind)
			if err == nil || got != "" {
				t.Fatalf("%s %s: got %q %v", mode, kind, got, err)
			}
			for _, want := range []string{"JEAN2_SANDBOX=off", "WSL", "cannot be confined on windows"} {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%s %s: %q does not say %q", mode, kind, err, want)
				}
			}
		}
		if s := st.Summary(); !strings.HasPrefix(s, "none: ") || !strings.Contains(s, "JEAN2_SANDBOX=off") {
			t.Errorf("summary: %s", s)
		}
	}
	off := Status{OS: "windows", Mode: ModeOff}
	if got, err := off.Choose("bun"); got != Unconfined || err != nil {
		t.Errorf("off: %q %v", got, err)
	}
	node := Status{OS: "windows", Mode: ModeNode}
	if got, err := node.Choose("node"); got != NodePermissions || err != nil {
		t.Errorf("node: %q %v", got, err)
	}
	if got, err := node.Choose("go"); got != Unconfined || err != nil {
		t.Errorf("node mode, go tool: %q %v", got, err)
	}
}

// A spec carries a Seatbelt profile only alone (not with Landlock or a namespace), and a
// profile's parameters are names and absolute paths.
func TestSpecSeatbeltCheck(t *testing.T) {
	prof, err := Plan{Program: "/usr/local/bin/node", ReadWrite: []string{"/Users/ada/ws"}}.Seatbelt(8080)
	if err != nil {
		t.Fatal(err)
	}
	if err := (Spec{Seatbelt: &prof}).Check(); err != nil {
		t.Fatal(err)
	}
	text, err := Spec{Seatbelt: &prof, DataMB: 512}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	back, err := DecodeSpec(text)
	if err != nil || back.Seatbelt == nil || back.Seatbelt.Profile != prof.Profile || len(back.Seatbelt.Params) != len(prof.Params) {
		t.Fatalf("round trip: %v %+v", err, back.Seatbelt)
	}
	for name, bad := range map[string]Spec{
		"with landlock": {Seatbelt: &prof, Landlock: true},
		"bad name":      {Seatbelt: &SeatbeltProfile{Profile: "(version 1)", Params: []SeatbeltParam{{Name: "X\")", Value: "/a"}}}},
		"relative":      {Seatbelt: &SeatbeltProfile{Profile: "(version 1)", Params: []SeatbeltParam{{Name: "X", Value: "a"}}}},
		"empty":         {Seatbelt: &SeatbeltProfile{}},
	} {
		if err := bad.Check(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
