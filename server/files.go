package server

import (
	"context"
	"encoding/base64"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/jean2/jean2/policy"
	"github.com/jean2/jean2/store"
	"github.com/jean2/jean2/toolfs"
)

// The workspace's files as the web client's file browser and @path mentions read them
// (docs/api.md, "Files"). Every read goes through the file system a tool is handed
// (toolfs), scoped to the workspace folder alone: no path outside it, no symlink that
// leads out, no protected place. A file whose path looks like it holds secrets
// (policy.IsSensitive: .env, keys, credentials…) is listed but its content is never
// sent: tools must ask the person before reading one, and a browser tab or a mention must
// not be a way around that.

const (
	// MaxPreviewBytes is the most of a text file the API sends (a preview, or a mention's
	// content for the model); the rest is cut, and the answer says so.
	MaxPreviewBytes = 256 << 10
	// maxListedPaths caps the paths offered for mentions.
	maxListedPaths = 5000
	// codeForbidden is the API's code for a path the workspace's policy refuses.
	codeForbidden = "forbidden"
	// codeSensitive is the API's code for a file whose content is withheld.
	codeSensitive = "sensitive"
)

// fileRoutes adds the routes of the workspace's files.
func (s *Server) fileRoutes(route func(string, handlerFunc)) {
	route("GET /api/workspaces/{id}/files", s.listFolder)
	route("GET /api/workspaces/{id}/files/content", s.fileContent)
	route("GET /api/workspaces/{id}/files/paths", s.filePaths)
}

// workspaceFiles is a workspace's folder as the API reads it.
type workspaceFiles struct {
	ws store.Workspace
	fs *toolfs.FS
}

// workspaceFiles opens the workspace of the request's {id} for reading.
func (s *Server) workspaceFiles(ctx context.Context, id string) (workspaceFiles, error) {
	ws, err := s.workspace(ctx, id)
	if err != nil {
		return workspaceFiles{}, err
	}
	if err := s.folderHere(ctx, store.Session{WorkspaceID: ws.ID}); err != nil {
		return workspaceFiles{}, err
	}
	fsys := toolfs.New(toolfs.Options{Scope: policy.Scope{Workspace: ws.Path, Home: s.cfg.UserHome}, Tool: "files",
		Protected: s.protectedFolders()})
	return workspaceFiles{ws: ws, fs: fsys}, nil
}

// abs is the workspace path of rel, a slash-separated path relative to the workspace
// folder ("" or "." for the folder itself). An absolute path or one that climbs out is
// refused before the file system is asked.
func (wf workspaceFiles) abs(rel string) (string, error) {
	if strings.ContainsRune(rel, 0) || path.IsAbs(rel) || filepath.IsAbs(rel) || strings.Contains(rel, `\`) {
		return "", errorf(http.StatusForbidden, codeForbidden, "path %q is not a path inside workspace %s: give it relative to the workspace folder, with /", rel, wf.ws.ID)
	}
	clean := path.Clean("/" + rel)
	if clean != "/"+strings.TrimSuffix(strings.TrimPrefix(rel, "./"), "/") && rel != "" && rel != "." {
		return "", errorf(http.StatusForbidden, codeForbidden, "path %q is not a plain path inside workspace %s (no . or .. elements)", rel, wf.ws.ID)
	}
	return filepath.Join(wf.ws.Path, filepath.FromSlash(clean)), nil
}

// fsErr turns a refusal or failure of the workspace's file system into the API's answer.
func (wf workspaceFiles) fsErr(rel string, err error) error {
	var fe *toolfs.Error
	if errors.As(err, &fe) {
		switch {
		case fe.Denied || fe.Code == "EACCES" || fe.Code == "EPERM" || fe.Code == "ELOOP":
			return errorf(http.StatusForbidden, codeForbidden, "%s of workspace %s is not open to reading: %v", rel, wf.ws.ID, err)
		case fe.Code == "ENOENT" || fe.Code == "ENOTDIR":
			return notFound("%s not found in workspace %s", rel, wf.ws.ID)
		case fe.Code == "EISDIR":
			return badRequest("%s of workspace %s is a folder, not a file", rel, wf.ws.ID)
		case errors.Is(err, toolfs.ErrNotRegular):
			return badRequest("%s of workspace %s is not a regular file (a device, pipe or socket)", rel, wf.ws.ID)
		}
	}
	return err
}

// sensitive reports whether the file at abs may hold secrets, as written or where it leads.
func sensitive(abs string) bool {
	return policy.IsSensitive(abs) || policy.IsSensitive(policy.Real(abs))
}

// fileEntry is one entry of a folder's listing.
type fileEntry struct {
	Name string `json:"name"`
	Path string `json:"path"` // relative to the workspace folder, with /
	// Type is "dir", "file", "link" (a symlink: reading it follows it, inside the workspace
	// only) or "other" (a device, pipe or socket).
	Type string `json:"type"`
	// Git is the entry's git status: modified, added, untracked, deleted, or for a folder
	// "changed" when it holds any of those; omitted when clean or not in a git repository.
	Git string `json:"git,omitempty"`
	// Sensitive says the file's content is withheld (see MaxPreviewBytes' package comment).
	Sensitive bool `json:"sensitive,omitempty"`
}

func (s *Server) listFolder(w http.ResponseWriter, r *http.Request) error {
	wf, err := s.workspaceFiles(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	rel := strings.TrimSuffix(r.URL.Query().Get("path"), "/")
	abs, err := wf.abs(rel)
	if err != nil {
		return err
	}
	entries, err := wf.fs.ReadDir(r.Context(), abs)
	if err != nil {
		return wf.fsErr(rel, err)
	}
	status := gitStatus(r.Context(), wf.ws.Path, s.log)
	out := make([]fileEntry, 0, len(entries))
	for _, e := range entries {
		if e.Name == ".git" && e.IsDirectory {
			continue // git's own store: nothing to browse
		}
		fe := fileEntry{Name: e.Name, Path: path.Join(rel, e.Name), Type: "other"}
		switch {
		case e.IsDirectory:
			fe.Type, fe.Git = "dir", status.folder(fe.Path)
		case e.IsFile:
			fe.Type, fe.Git = "file", status.files[fe.Path]
		default:
			// Only the entry's own type: whether a link may be followed is decided when it is read.
			if fi, err := os.Lstat(filepath.Join(abs, e.Name)); err == nil && fi.Mode()&fs.ModeSymlink != 0 {
				fe.Type = "link"
			}
			fe.Git = status.files[fe.Path]
		}
		fe.Sensitive = fe.Type != "dir" && sensitive(filepath.Join(abs, e.Name))
		out = append(out, fe)
	}
	out = append(out, status.deletedIn(rel, out)...)
	slices.SortStableFunc(out, func(a, b fileEntry) int {
		if (a.Type == "dir") != (b.Type == "dir") {
			if a.Type == "dir" {
				return -1
			}
			return 1
		}
		return strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name))
	})
	writeJSON(w, http.StatusOK, map[string]any{"path": rel, "entries": out, "git": status.repo})
	return nil
}

// fileContent is a file as the API sends it: text (cut at MaxPreviewBytes), an image (PNG,
// JPEG, GIF or WebP, up to store.MaxImageBytes) as base64, or, for anything else, what it
// is without its bytes.
type fileContent struct {
	Path      string `json:"path"`
	Size      int64  `json:"size"`
	Kind      string `json:"kind"` // text, image or binary
	MediaType string `json:"mediaType"`
	Text      string `json:"text,omitempty"`
	Data      string `json:"data,omitempty"` // an image's bytes, base64
	// Truncated says Text is the file's first MaxPreviewBytes only (or, for an image, that
	// it is too large to send and Data is empty).
	Truncated bool   `json:"truncated,omitempty"`
	Git       string `json:"git,omitempty"`
}

func (s *Server) fileContent(w http.ResponseWriter, r *http.Request) error {
	wf, err := s.workspaceFiles(r.Context(), r.PathValue("id"))
	if err != nil {
		return err
	}
	rel := strings.TrimSuffix(r.URL.Query().Get("path"), "/")
	fc, err := wf.read(r.Context(), rel, MaxPreviewBytes)
	if err != nil {
		return err
	}
	fc.Git = gitStatus(r.Context(), wf.ws.Path, s.log).files[rel]
	writeJSON(w, http.StatusOK, fc)
	return nil
}

// read reads a workspace file for a person or a mention: text up to textCap bytes, an
// image whole up to store.MaxImageBytes, anything else described. A sensitive file is
// refused (403, code sensitive).
func (wf workspaceFiles) read(ctx context.Context, rel string, textCap int64) (fileContent, error) {
	if rel == "" {
		return fileContent{}, badRequest("name a file of workspace %s (path=…)", wf.ws.ID)
	}
	abs, err := wf.abs(rel)
	if err != nil {
		return fileContent{}, err
	}
	if sensitive(abs) {
		return fileContent{}, errorf(http.StatusForbidden, codeSensitive,
			"%s of workspace %s may hold secrets (its name matches a sensitive pattern such as .env, .key or credentials), so jean2 does not send its content; tools too must ask before reading it", rel, wf.ws.ID)
	}
	head, size, err := wf.fs.ReadHead(ctx, abs, max(textCap, store.MaxImageBytes))
	if err != nil {
		return fileContent{}, wf.fsErr(rel, err)
	}
	fc := fileContent{Path: rel, Size: size, MediaType: http.DetectContentType(head)}
	if mt := imageType(head); mt != "" {
		fc.Kind, fc.MediaType = "image", mt
		if size > store.MaxImageBytes {
			fc.Truncated = true
		} else {
			fc.Data = base64.StdEncoding.EncodeToString(head)
		}
		return fc, nil
	}
	text := head[:min(int64(len(head)), textCap)]
	if !looksLikeText(text, size > int64(len(text))) {
		fc.Kind = "binary"
		return fc, nil
	}
	fc.Kind, fc.Text, fc.Truncated = "text", string(trimCutRune(text)), size > int64(len(text))
	if strings.HasPrefix(fc.MediaType, "application/octet-stream") || strings.HasPrefix(fc.MediaType, "text/plain") {
		fc.MediaType = "text/plain; charset=utf-8"
	}
	return fc, nil
}

// imageType is the media type of an image jean2 sends to models (by its bytes, never its
// name), or "".
func imageType(head []byte) string {
	switch mt := http.DetectContentType(head); mt {
	case "image/png", "image/jpeg", "image/gif", "image/webp": // store.CheckImage's
		return mt
	}
	return ""
}

// looksLikeText reports whether b is UTF-8 text without NUL bytes; cut says b is a
// file's head, which may end inside a character.
func looksLikeText(b []byte, cut bool) bool {
	if slices.Contains(b, 0) {
		return false
	}
	if cut {
		b = trimCutRune(b)
	}
	return utf8.Valid(b)
}

// trimCutRune drops an incomplete UTF-8 sequence at the end of b (a head cut mid-character).
func trimCutRune(b []byte) []byte {
	for i := 1; i <= utf8.UTFMax && i <= len(b); i++ {
		if utf8.RuneStart(b[len(b)-i]) {
			if !utf8.FullRune(b[len(b)-i:]) {
				return b[:len(b)-i]
			}
			break
		}
	}
	return b
}
