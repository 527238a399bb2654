package mcpclient

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"regexp"

	"github.com/jean2/jean2/internal/fsutil"
)

// ErrServerExists is wrapped when AddServer is given a name the file already lists.
var ErrServerExists = errors.New("name taken")

// serverName is what AddServer accepts as a new server's name: it names the server in
// URLs (/api/mcp/servers/NAME) and in its tools' names, so it keeps to plain characters.
var serverName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// AddServer adds the server s under s.Name to the mcp.json at file (made when missing),
// after checking it as Parse would; the file's other entries and fields are kept. The file
// is replaced atomically with mode 0600: env values and headers may hold secrets. A file
// that does not parse is left alone, with the error saying what is wrong in it.
func AddServer(file string, s ServerConfig) error {
	if !serverName.MatchString(s.Name) {
		return fmt.Errorf("name %q: use letters, digits, '.', '_' and '-' (at most 64, starting with a letter or digit)", s.Name)
	}
	entry := s // written as given: the type check fills in stays implicit in the file
	if err := s.check(); err != nil {
		return fmt.Errorf("server %s: %w", s.Name, err)
	}
	top, servers, err := readRawFile(file)
	if err != nil {
		return err
	}
	if _, ok := servers[s.Name]; ok {
		return fmt.Errorf("%w: %s already lists a server named %s; choose another name", ErrServerExists, file, s.Name)
	}
	raw, err := json.Marshal(entry)
	if err != nil {
		return fmt.Errorf("server %s: %w", s.Name, err)
	}
	servers[s.Name] = raw
	if top["mcpServers"], err = json.Marshal(servers); err != nil {
		return fmt.Errorf("server %s: %w", s.Name, err)
	}
	data, err := json.MarshalIndent(top, "", "  ")
	if err != nil {
		return fmt.Errorf("server %s: %w", s.Name, err)
	}
	if err := fsutil.WriteFileDurable(file, append(data, '\n'), 0o600); err != nil {
		return fmt.Errorf("write %s: %w", file, err)
	}
	return nil
}

// readRawFile reads an mcp.json as its top-level fields and its mcpServers entries, raw, so
// that writing it back keeps what this version of jean2 does not know. The file must
// parse (Parse) first: a broken file is the person's to fix, not to overwrite.
func readRawFile(file string) (map[string]json.RawMessage, map[string]json.RawMessage, error) {
	top, servers := map[string]json.RawMessage{}, map[string]json.RawMessage{}
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return top, servers, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", file, err)
	}
	if _, err := Parse(file, data); err != nil {
		return nil, nil, fmt.Errorf("%s cannot be read, so nothing is added to it; fix it first: %w", file, err)
	}
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, nil, fmt.Errorf("%s: %w", file, err)
	}
	if err := json.Unmarshal(top["mcpServers"], &servers); err != nil {
		return nil, nil, fmt.Errorf("%s: mcpServers: %w", file, err)
	}
	return top, servers, nil
}

// References are the variables of jean2's environment the entry's env values and headers
// name as ${NAME}, which jean2 fills in when it starts the server.
func (s ServerConfig) References() []string {
	var out []string
	for _, m := range []map[string]string{s.Env, s.Headers} {
		for _, v := range m {
			for _, ref := range envRef.FindAllStringSubmatch(v, -1) {
				out = append(out, ref[1])
			}
		}
	}
	return out
}
