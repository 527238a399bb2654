package mcpserver

import (
	"context"
	"encoding/json"
	"fmt"
	"mime"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"
	"gopkg.in/yaml.v3"
)

// Resources a person writes. Each YAML file of $JEAN2_HOME/resources (the same home whose
// skills folder holds the prompts) offers one resource at a URI of its choosing, or a
// template of them:
//
//	uri: docs://style-guide             # or uriTemplate: tickets://{id}/summary
//	title: Style guide
//	description: How we write
//	mimeType: text/markdown             # else from file's extension; text/plain for text
//	text: ...                           # the content ({id} of a template replaced), or
//	file: style-guide.md                # a file beside it, sent as a blob unless text
//
// They are read again before a request that shows resources and every PromptPoll, like the
// skills; a file changed or added is announced (resources/updated to its subscribers,
// resources/list_changed by the go-sdk). A file is read only inside the resources folder
// (os.Root), so a link cannot reach out of it.

// resourcesDir is the folder of a home's authored resources.
const resourcesDir = "resources"

// maxAuthoredFile bounds a file a resource or a prompt sends.
const maxAuthoredFile = 16 << 20

// resourceFile is one YAML file of the resources folder.
type resourceFile struct {
	URI         string `yaml:"uri" json:"uri,omitempty"`
	URITemplate string `yaml:"uriTemplate" json:"uriTemplate,omitempty"`
	Name        string `yaml:"name" json:"name,omitempty"`
	Title       string `yaml:"title" json:"title,omitempty"`
	Description string `yaml:"description" json:"description,omitempty"`
	MIMEType    string `yaml:"mimeType" json:"mimeType,omitempty"`
	Text        string `yaml:"text" json:"text,omitempty"`
	File        string `yaml:"file" json:"file,omitempty"`
	// stamp is the file's size and time, so a changed file is announced.
	Stamp string `yaml:"-" json:"stamp,omitempty"`
}

// authoredSet is the authored resources offered now: key (uri or template) → the JSON of
// its file, and the files that could not be read, so each problem is logged once.
type authoredSet struct {
	mu        sync.Mutex
	listed    map[string]string
	templates map[string]*uritemplate.Template
	broken    map[string]string
}

// readResourceFiles reads the resources folder of home: each usable file by key, and why
// each other one is not.
func readResourceFiles(home string) (map[string]resourceFile, map[string]string) {
	files, broken := map[string]resourceFile{}, map[string]string{}
	root, err := os.OpenRoot(filepath.Join(home, resourcesDir))
	if err != nil {
		return files, broken
	}
	defer root.Close()
	for _, name := range yamlFiles(root) {
		rf, err := parseResourceFile(root, name)
		if err != nil {
			broken[name] = err.Error()
			continue
		}
		key := rf.URI + rf.URITemplate
		if _, dup := files[key]; dup {
			broken[name] = fmt.Sprintf("%s is offered by another file already", key)
			continue
		}
		files[key] = rf
	}
	return files, broken
}

// yamlFiles lists the .yaml and .yml files at the top of root, sorted.
func yamlFiles(root *os.Root) []string {
	f, err := root.Open(".")
	if err != nil {
		return nil
	}
	defer f.Close()
	names, _ := f.Readdirnames(-1)
	var out []string
	for _, n := range names {
		if ext := filepath.Ext(n); (ext == ".yaml" || ext == ".yml") && !strings.HasPrefix(n, ".") {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out
}

func parseResourceFile(root *os.Root, name string) (resourceFile, error) {
	var rf resourceFile
	data, err := readRooted(root, name)
	if err == nil {
		err = yaml.Unmarshal(data, &rf)
	}
	switch {
	case err != nil:
		return rf, err
	case (rf.URI == "") == (rf.URITemplate == ""):
		return rf, fmt.Errorf("give one of uri and uriTemplate")
	case (rf.Text == "") == (rf.File == ""):
		return rf, fmt.Errorf("give one of text and file")
	case rf.URITemplate != "" && rf.File != "":
		return rf, fmt.Errorf("a template's content is text (its {variables} replaced), not a file")
	}
	if rf.URITemplate != "" {
		if _, err := uritemplate.New(rf.URITemplate); err != nil {
			return rf, fmt.Errorf("uriTemplate %q: %w", rf.URITemplate, err)
		}
	}
	switch uri := rf.URI + rf.URITemplate; {
	case !strings.Contains(uri, ":"):
		return rf, fmt.Errorf("%q is not an absolute URI (it needs a scheme)", uri)
	case strings.HasPrefix(uri, "jean2:"):
		return rf, fmt.Errorf("%q: jean2: URIs are jean2's own (workspace files, overflowing results)", uri)
	}
	if rf.Name == "" {
		rf.Name = strings.TrimSuffix(name, filepath.Ext(name))
	}
	if rf.File != "" {
		st, err := root.Stat(rf.File)
		if err != nil {
			return rf, fmt.Errorf("file: %w", err)
		}
		rf.Stamp = fmt.Sprintf("%d %d", st.Size(), st.ModTime().UnixNano())
	}
	if rf.MIMEType == "" {
		rf.MIMEType = mimeOf(rf.File)
	}
	return rf, nil
}

// mimeOf is the media type of a file by its extension; text/plain for inline text or an
// extension no one knows.
func mimeOf(file string) string {
	if t := mime.TypeByExtension(filepath.Ext(file)); file != "" && t != "" {
		return t
	}
	return "text/plain"
}

// readRooted reads name inside root, at most maxAuthoredFile bytes.
func readRooted(root *os.Root, name string) ([]byte, error) {
	st, err := root.Stat(name)
	if err != nil {
		return nil, err
	}
	if !st.Mode().IsRegular() || st.Size() > maxAuthoredFile {
		return nil, fmt.Errorf("%s is not a regular file of at most %d bytes", name, maxAuthoredFile)
	}
	return root.ReadFile(name)
}

// syncResources makes the offered authored resources match the files.
func (s *Server) syncResources(ctx context.Context) {
	home := s.skillsHome()
	if home == "" {
		return
	}
	files, broken := readResourceFiles(home)
	for _, uri := range s.offerResources(home, files, broken) {
		_ = s.mcp.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri})
	}
}

// offerResources offers the resource files read, withdraws those gone, and returns the
// URIs of the resources that changed.
func (s *Server) offerResources(home string, files map[string]resourceFile, broken map[string]string) (changed []string) {
	a := &s.authored
	a.mu.Lock()
	defer a.mu.Unlock()
	for name, why := range broken {
		if a.broken[name] != why {
			s.log.Warn("a resource file is not offered", "file", filepath.Join(home, resourcesDir, name), "err", why)
		}
	}
	a.broken = broken
	for key, rf := range files {
		j, _ := json.Marshal(rf)
		old, had := a.listed[key]
		if old == string(j) {
			continue
		}
		a.listed[key] = string(j)
		s.offerResource(home, rf)
		if had && rf.URI != "" {
			changed = append(changed, rf.URI)
		}
	}
	for key, old := range a.listed {
		if _, ok := files[key]; ok {
			continue
		}
		delete(a.listed, key)
		delete(a.templates, key)
		if strings.Contains(old, `"uriTemplate"`) {
			s.mcp.RemoveResourceTemplates(key)
		} else {
			s.mcp.RemoveResources(key)
		}
	}
	return changed
}

// offerResource adds (or replaces) one authored resource or template.
func (s *Server) offerResource(home string, rf resourceFile) {
	if rf.URITemplate != "" {
		tpl, _ := uritemplate.New(rf.URITemplate)
		s.authored.templates[rf.URITemplate] = tpl
		s.mcp.AddResourceTemplate(&mcp.ResourceTemplate{
			URITemplate: rf.URITemplate, Name: rf.Name, Title: rf.Title, Description: rf.Description, MIMEType: rf.MIMEType,
		}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			text := rf.Text
			for name, v := range tpl.Match(req.Params.URI) {
				text = strings.ReplaceAll(text, "{"+name+"}", v.String())
			}
			return contentsOf(req.Params.URI, rf.MIMEType, []byte(text)), nil
		})
		return
	}
	s.mcp.AddResource(&mcp.Resource{
		URI: rf.URI, Name: rf.Name, Title: rf.Title, Description: rf.Description, MIMEType: rf.MIMEType,
	}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		if rf.File == "" {
			return contentsOf(rf.URI, rf.MIMEType, []byte(rf.Text)), nil
		}
		data, err := readAuthoredFile(filepath.Join(home, resourcesDir), rf.File)
		if err != nil {
			return nil, fmt.Errorf("resources/read %s: %w", rf.URI, err)
		}
		return contentsOf(rf.URI, rf.MIMEType, data), nil
	})
}

// readAuthoredFile reads name inside the folder dir.
func readAuthoredFile(dir, name string) ([]byte, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	defer root.Close()
	return readRooted(root, name)
}

// contentsOf is data as a resources/read answer: text when its type is text and it is
// UTF-8, else a blob (base64 on the wire).
func contentsOf(uri, mimeType string, data []byte) *mcp.ReadResourceResult {
	c := &mcp.ResourceContents{URI: uri, MIMEType: mimeType}
	if isText(mimeType) && utf8.Valid(data) {
		c.Text = string(data)
	} else {
		c.Blob = data
	}
	return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{c}}
}

// isText reports whether a media type is read as text.
func isText(mimeType string) bool {
	t, _, _ := mime.ParseMediaType(mimeType)
	return strings.HasPrefix(t, "text/") || t == "application/json" || strings.HasSuffix(t, "+json") ||
		t == "application/xml" || strings.HasSuffix(t, "+xml") || t == "application/yaml"
}

// offersAuthored reports whether uri is an authored resource or matches an authored template.
func (s *Server) offersAuthored(uri string) bool {
	a := &s.authored
	a.mu.Lock()
	defer a.mu.Unlock()
	if _, ok := a.listed[uri]; ok {
		return true
	}
	for _, tpl := range a.templates {
		if tpl.Match(uri) != nil {
			return true
		}
	}
	return false
}
