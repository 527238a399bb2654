package policy_test

import (
	"slices"
	"testing"

	"github.com/jean2/jean2/policy"
)

// The credential places a review found read through a workspace on ~ are in the list, below
// the home given.
func TestCredentialPaths(t *testing.T) {
	const home = "/home/u"
	got := policy.CredentialPaths(home)
	for _, want := range []string{"/home/u/.ssh", "/home/u/.aws", "/home/u/.npmrc", "/home/u/.config/gh", "/home/u/.git-credentials"} {
		if !slices.Contains(got, want) {
			t.Errorf("CredentialPaths(%q) lacks %s: %v", home, want, got)
		}
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
