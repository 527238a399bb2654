package mcpserver

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/jean2/jean2/skills"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"gopkg.in/yaml.v3"
)

// Saved prompts. A skill is one text of instructions; a prompt an MCP client shows may
// hold more — an image to look at, a document to work on, several messages. Each YAML file
// of $JEAN2_HOME/prompts is such a prompt, named by its file (or name:):
//
//	description: Review a screenshot
//	arguments:                       # as a skill's (name, description, required, values, ask)
//	  - {name: page, required: true, ask: "Which page?"}
//	messages:                        # each one of text, image, audio, resource
//	  - image: shot.png              # a file beside it (mimeType: from its extension)
//	  - resource: {uri: "docs://$page", mimeType: text/plain, text: "..."}  # or file:
//	  - text: Review $page against the screenshot above.
//	    role: user                   # user (the default) or assistant
//
// $name in a text, a resource's uri or text is the argument's value. A skill of the same
// name wins (the file is logged and left out). Files are read inside the prompts folder
// only (os.Root), when the prompt is got.

// promptsDir is the folder of a home's saved prompts.
const promptsDir = "prompts"

// promptFile is one YAML file of the prompts folder.
type promptFile struct {
	Name        string            `yaml:"name" json:"name"`
	Title       string            `yaml:"title" json:"title,omitempty"`
	Description string            `yaml:"description" json:"description,omitempty"`
	Arguments   []skills.Argument `yaml:"arguments" json:"arguments,omitempty"`
	Messages    []promptPart      `yaml:"messages" json:"messages"`
	// file is the YAML file's name in the folder.
	file string
}

// promptPart is one message of a saved prompt.
type promptPart struct {
	Role     string        `yaml:"role" json:"role,omitempty"`
	Text     string        `yaml:"text" json:"text,omitempty"`
	Image    string        `yaml:"image" json:"image,omitempty"`
	Audio    string        `yaml:"audio" json:"audio,omitempty"`
	MIMEType string        `yaml:"mimeType" json:"mimeType,omitempty"`
	Resource *resourcePart `yaml:"resource" json:"resource,omitempty"`
}

// resourcePart is a resource embedded in a saved prompt's message.
type resourcePart struct {
	URI      string `yaml:"uri" json:"uri"`
	MIMEType string `yaml:"mimeType" json:"mimeType,omitempty"`
	Text     string `yaml:"text" json:"text,omitempty"`
	File     string `yaml:"file" json:"file,omitempty"`
}

// readPromptFiles reads the prompts folder of home: each usable prompt by name, and why
// each other file is not one.
func readPromptFiles(home string) (map[string]promptFile, map[string]string) {
	prompts, broken := map[string]promptFile{}, map[string]string{}
	root, err := os.OpenRoot(filepath.Join(home, promptsDir))
	if err != nil {
		return prompts, broken
	}
	defer root.Close()
	for _, name := range yamlFiles(root) {
		var pf promptFile
		data, err := readRooted(root, name)
		if err == nil {
			err = yaml.Unmarshal(data, &pf)
		}
		if err == nil {
			err = checkPromptFile(&pf, strings.TrimSuffix(name, filepath.Ext(name)))
		}
		if err == nil && prompts[pf.Name].Name != "" {
			err = fmt.Errorf("another file saves a prompt named %q already", pf.Name)
		}
		if err != nil {
			broken[name] = err.Error()
			continue
		}
		pf.file = name
		prompts[pf.Name] = pf
	}
	return prompts, broken
}

// checkPromptFile checks a saved prompt and fills in its name and roles.
func checkPromptFile(pf *promptFile, stem string) error {
	if pf.Name == "" {
		pf.Name = stem
	}
	if err := skills.CheckName(pf.Name); err != nil {
		return err
	}
	if len(pf.Messages) == 0 {
		return fmt.Errorf("prompt %s has no messages", pf.Name)
	}
	for i := range pf.Messages {
		m := &pf.Messages[i]
		if m.Role == "" {
			m.Role = "user"
		}
		if m.Role != "user" && m.Role != "assistant" {
			return fmt.Errorf("message %d: role %q is not user or assistant", i+1, m.Role)
		}
		n := 0
		for _, set := range []bool{m.Text != "", m.Image != "", m.Audio != "", m.Resource != nil} {
			if set {
				n++
			}
		}
		if n != 1 {
			return fmt.Errorf("message %d: give exactly one of text, image, audio and resource", i+1)
		}
		if r := m.Resource; r != nil && (r.URI == "" || (r.Text == "") == (r.File == "")) {
			return fmt.Errorf("message %d: a resource needs a uri and one of text and file", i+1)
		}
	}
	return nil
}

// savedPrompt is a saved prompt as prompts/list shows it.
func savedPrompt(pf promptFile) *mcp.Prompt {
	p := &mcp.Prompt{Name: pf.Name, Title: pf.Title, Description: pf.Description}
	for _, a := range pf.Arguments {
		p.Arguments = append(p.Arguments, promptArgument(a))
	}
	return p
}

// getSaved answers prompts/get of a saved prompt read from dir.
func getSaved(dir string, pf promptFile) mcp.PromptHandler {
	return func(_ context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		given, questions, err := askArguments(pf.Name, pf.Arguments, req)
		if err != nil {
			return nil, err
		}
		if questions != nil {
			return &mcp.GetPromptResult{InputRequests: questions}, nil
		}
		for _, a := range pf.Arguments {
			if a.Required && given[a.Name] == "" {
				return nil, invalidParams("prompts/get %s: the argument %q is required", pf.Name, a.Name)
			}
		}
		fill := substitution(pf.Arguments, given)
		res := &mcp.GetPromptResult{Description: pf.Description}
		for i, m := range pf.Messages {
			c, err := partContent(dir, m, fill)
			if err != nil {
				return nil, fmt.Errorf("prompts/get %s: message %d: %w", pf.Name, i+1, err)
			}
			res.Messages = append(res.Messages, &mcp.PromptMessage{Role: mcp.Role(m.Role), Content: c})
		}
		return res, nil
	}
}

// substitution replaces $name with each declared argument's value, longer names first so
// that $page is not read as $p followed by "age".
func substitution(args []skills.Argument, given map[string]string) func(string) string {
	names := make([]string, 0, len(args))
	for _, a := range args {
		names = append(names, a.Name)
	}
	sort.Slice(names, func(i, j int) bool { return len(names[i]) > len(names[j]) })
	var pairs []string
	for _, n := range names {
		pairs = append(pairs, "$"+n, given[n])
	}
	r := strings.NewReplacer(pairs...)
	return r.Replace
}

// partContent is one message's content.
func partContent(dir string, m promptPart, fill func(string) string) (mcp.Content, error) {
	switch {
	case m.Text != "":
		return &mcp.TextContent{Text: fill(m.Text)}, nil
	case m.Image != "" || m.Audio != "":
		file := m.Image + m.Audio
		data, err := readAuthoredFile(dir, file)
		if err != nil {
			return nil, err
		}
		mt := m.MIMEType
		if mt == "" {
			mt = mimeOf(file)
		}
		if m.Image != "" {
			return &mcp.ImageContent{Data: data, MIMEType: mt}, nil
		}
		return &mcp.AudioContent{Data: data, MIMEType: mt}, nil
	}
	r := m.Resource
	data := []byte(fill(r.Text))
	mt := r.MIMEType
	if r.File != "" {
		var err error
		if data, err = readAuthoredFile(dir, r.File); err != nil {
			return nil, err
		}
		if mt == "" {
			mt = mimeOf(r.File)
		}
	}
	if mt == "" {
		mt = "text/plain"
	}
	return &mcp.EmbeddedResource{Resource: contentsOf(fill(r.URI), mt, data).Contents[0]}, nil
}
