package policy

import "path/filepath"

// credentialPaths are the places below the user's home that hold credentials: keys, cloud and
// cluster logins, registry tokens, password stores.
var credentialPaths = [...]string{".ssh", ".gnupg", ".aws", ".azure", ".kube", ".docker", ".config/gcloud", ".config/gh",
	".netrc", ".git-credentials", ".config/git/credentials", ".npmrc", ".pypirc", ".cargo/credentials.toml",
	".cargo/credentials", ".password-store", ".local/share/keyrings"}

// SettingsDir is the folder in a workspace root that holds the workspace's jean2 settings
// (mcp.json and the like), which jean2 acts on.
const SettingsDir = ".jean2"

// CredentialPaths returns the credential folders and files below home (nil when home is
// empty).
func CredentialPaths(home string) []string {
	if home == "" {
		return nil
	}
	out := make([]string, 0, len(credentialPaths))
	for _, rel := range credentialPaths {
		out = append(out, filepath.Join(home, rel))
	}
	return out
}

// ProtectedPaths returns what no tool may reach through jean2, whatever its workspace and
// whatever it was granted: jean2's home (its database, its .env, other tools' sources and
// data), the tools folder (which may lie elsewhere) and the credential folders below the
// user's home. Empty arguments are left out. It is the one list the host hands to ctx.fs
// and to the sandbox.
func ProtectedPaths(home, jean2Home, toolsDir string) []string {
	var out []string
	for _, p := range []string{jean2Home, toolsDir} {
		if p != "" {
			out = append(out, p)
		}
	}
	return append(out, CredentialPaths(home)...)
}

// SettingsDirs returns the settings folder (SettingsDir) of each of the scope's workspace
// roots: the workspace and its allowed paths. Tools may read them, never change them.
func (s Scope) SettingsDirs() []string {
	var out []string
	for _, root := range append([]string{s.Workspace}, s.Allowed...) {
		if root != "" && filepath.IsAbs(root) {
			out = append(out, filepath.Join(root, SettingsDir))
		}
	}
	return out
}
