package server

import (
	"context"
	"encoding/base64"
	"fmt"
	"net/http"
	"path"
	"path/filepath"
	"strings"

	"github.com/jean2/jean2/harness"
	"github.com/jean2/jean2/store"
)

// fileRef is a workspace file a person mentioned (@path) in a message: its content is
// attached to the message when it is sent.
type fileRef struct {
	Path string `json:"path"` // relative to the workspace folder, with /
}

// readMentions reads the mentioned files of a message under the workspace's policy (see
// workspaceFiles.read) into resource parts: a text file's content (cut at MaxPreviewBytes,
// with a line saying so), an image's bytes (an image part for the model; a line for a model
// that takes none), or a line describing any other file. A refused or missing file refuses
// the message, so nothing is sent that the person did not see attached.
func (s *Server) readMentions(ctx context.Context, ses store.Session, refs []fileRef) ([]harness.Resource, error) {
	if len(refs) == 0 {
		return nil, nil
	}
	if len(refs) > harness.MaxResources {
		return nil, badRequest("the message mentions %d files; attach at most %d", len(refs), harness.MaxResources)
	}
	wf, err := s.workspaceFiles(ctx, ses.WorkspaceID)
	if err != nil {
		return nil, err
	}
	out := make([]harness.Resource, 0, len(refs))
	for i, ref := range refs {
		rel := strings.TrimSuffix(ref.Path, "/")
		fc, err := wf.read(ctx, rel, MaxPreviewBytes)
		if err != nil {
			if ae, ok := err.(*apiError); ok {
				ae.Message = fmt.Sprintf("files[%d]: %s; your message was not sent", i, ae.Message)
			}
			return nil, err
		}
		r := harness.Resource{ResourceInfo: store.ResourceInfo{Path: path.Clean(filepath.ToSlash(rel)), WorkspaceID: ses.WorkspaceID}, MimeType: fc.MediaType}
		switch {
		case fc.Kind == "text":
			r.Text = fc.Text
			if fc.Truncated {
				r.Text += fmt.Sprintf("\n[cut: %s is %d bytes; only its first %d are attached]", rel, fc.Size, len(fc.Text))
			}
		case fc.Kind == "image" && !fc.Truncated:
			r.Blob, _ = base64.StdEncoding.DecodeString(fc.Data) // encoded just above
		default:
			r.MimeType = "text/plain"
			r.Text = fmt.Sprintf("[%s: %s of %d bytes, not attached: only text files and images of at most %d MiB are]", rel, fc.MediaType, fc.Size, store.MaxImageBytes>>20)
		}
		out = append(out, r)
	}
	return out, nil
}

// filePaths lists the workspace's files (up to maxListedPaths, folders that hold
// dependencies, build output or caches left out) for the @path mentions of the composer.
// Files whose content is withheld are not offered.
func (s *Server) filePaths(w http.ResponseWriter, r *http.Request) error {
	wf, err := s.workspaceFiles(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	paths := []string{}
	truncated := false
	var walk func(rel string) error
	walk = func(rel string) error {
		if err := r.Context().Err(); err != nil {
			return err
		}
		abs, _ := wf.abs(rel) // built from listed names: always plain
		entries, err := wf.fs.ReadDir(r.Context(), abs)
		if err != nil {
			return nil // refused or gone: passed over
		}
		for _, e := range entries {
			if len(paths) >= maxListedPaths {
				truncated = true
				return nil
			}
			child := path.Join(rel, e.Name)
			switch {
			case e.IsDirectory && !skippedFolder(e.Name):
				if err := walk(child); err != nil {
					return err
				}
			case e.IsFile && !sensitive(filepath.Join(abs, e.Name)):
				paths = append(paths, child)
			}
		}
		return nil
	}
	if err := walk(""); err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, map[string]any{"paths": paths, "truncated": truncated})
	return nil
}

// skippedFolder says whether the mention list leaves a folder out: version control,
// dependencies, build output and caches, as glob and grep do.
func skippedFolder(name string) bool {
	switch name {
	case ".git", "node_modules", "__pycache__", "dist", "build", "target", "vendor", ".venv", "venv",
		".next", ".nuxt", ".cache", ".idea", ".vscode", "coverage", ".turbo", ".svelte-kit":
		return true
	}
	return false
}
