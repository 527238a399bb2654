package host

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/jean2/jean2/internal/fsutil"
)

// KeepResult writes the whole of a tool result as the model saw it (the text of call callID
// of the session) into the session's temporary folder and returns the file's path. The
// harness calls it when it prunes an old result to fit the model's context window, so the
// note that replaces the result can name where it is; read-file reads the session's folder
// without asking. A call's result is written once per host: compaction prunes it again on
// every later request.
func (h *Host) KeepResult(workspaceID, sessionID, callID, text string) (string, error) {
	key, err := tempKey(Call{SessionID: sessionID, Workspace: Workspace{ID: workspaceID}}, "")
	if err != nil {
		return "", err
	}
	dir, err := h.sessionTemp(key)
	if err != nil {
		return "", err
	}
	name := "tool-result-" + safeName(callID) + "-pruned.txt"
	path := filepath.Join(dir, name)
	if _, done := h.kept.Load(path); done {
		return path, nil
	}
	// Replaced by rename in the folder opened without following links: a file or link a
	// worker planted under the name is replaced, never written through.
	if err := fsutil.ReplaceIn(h.layout.Temp, key, name, []byte(text), 0o600); err != nil {
		return "", fmt.Errorf("keep the result of call %s in %s: %w", callID, dir, err)
	}
	h.kept.Store(path, struct{}{})
	return path, nil
}

// forgetKept drops what KeepResult remembers of the results in dir (its folder is removed).
func (h *Host) forgetKept(dir string) {
	h.kept.Range(func(k, _ any) bool {
		if strings.HasPrefix(k.(string), dir+string(filepath.Separator)) {
			h.kept.Delete(k)
		}
		return true
	})
}
