package policy_test

import (
	"slices"
	"testing"

	"github.com/jean2/jean2/policy"
	"github.com/jean2/jean2/sandbox"
)

// The sandbox keeps its own copy of the credential list until it switches to policy's; the
// two must not drift apart.
func TestCredentialPathsMatchSandbox(t *testing.T) {
	const home = "/home/u"
	if got, want := policy.CredentialPaths(home), sandbox.CredentialPaths(home); !slices.Equal(got, want) {
		t.Fatalf("policy.CredentialPaths = %v, sandbox.CredentialPaths = %v", got, want)
	}
	if policy.CredentialPaths("") != nil {
		t.Fatal("no home, yet credential paths")
	}
}

func TestProtectedPaths(t *testing.T) {
	got := policy.ProtectedPaths("/home/u", "/home/u/.jean2", "/srv/tools")
	for _, want := range []string{"/home/u/.jean2", "/srv/tools", "/home/u/.ssh", "/home/u/.aws", "/home/u/.config/gh"} {
		if !slices.Contains(got, want) {
			t.Errorf("ProtectedPaths lacks %s: %v", want, got)
		}
	}
	if slices.Contains(policy.ProtectedPaths("/home/u", "", ""), "") {
		t.Error("an empty place was kept")
	}
}

func TestSettingsDirs(t *testing.T) {
	s := policy.Scope{Workspace: "/w", Allowed: []string{"/a", "", "rel"}, TempDir: "/tmp/s"}
	if got, want := s.SettingsDirs(), []string{"/w/.jean2", "/a/.jean2"}; !slices.Equal(got, want) {
		t.Fatalf("SettingsDirs = %v, want %v", got, want)
	}
}
